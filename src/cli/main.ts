/**
 * ci-test-analytics: uploads JUnit XML / JSON test reports to the CI test analytics service.
 *
 *   npx ci-test-analytics upload --url https://… --token ctu_… 'reports/**\/*.xml'
 *
 * The entry of the bundle packages/uploader/bin/ci-test-analytics.mjs (`npm run build:cli`),
 * which has no runtime dependencies (its libraries are bundled). Documented in
 * docs/uploader-cli.md.
 *
 * Exit codes: 0 success, or only warnings about the upload (an analytics outage never fails the
 * build); 1 with --quarantine a failed test not quarantined (or an unreadable report), with
 * --fail-on-upload-error an upload failed after retries (network, 5xx, 429) or --wait timed out;
 * 2 usage error (bad flags, missing url/token, no files, unreadable file, request too large);
 * 3 rejected by the server (400/413/415/422 and other 4xx; 401/403 with --fail-on-upload-error);
 * 4 run processed as failed (--wait).
 */
import { appendFileSync, existsSync, readFileSync, realpathSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { TOKEN_BODY_LENGTH, TOKEN_KINDS, hasTokenShape } from "../lib/keys";
import { HELP, type OptionValues, type UploadSettings, parseCommandLine, tokenCandidate, uploadSettings } from "./args";
import { resolveBaseCommit } from "./base-commit";
import { readCheckout } from "./checkout";
import { type Env, detectCiMetadata, detectPullRequestBase } from "./ci-metadata";
import { EXIT_OK, EXIT_REJECTED, EXIT_RUN_FAILED, EXIT_TESTS_FAILED, EXIT_UPLOAD_FAILED, EXIT_USAGE, UsageError } from "./exit-codes";
import { displayPath, nonEmpty } from "./format";
import { type RetryOptions, type Sleep, realSleep } from "./http-retry";
import { Output, type Writable, maskSecretShapes } from "./output";
import { type QuarantineLookup, type Verdict, judgeFailures, lookUpQuarantine } from "./quarantine";
import { type RunMetadata, expandFiles } from "./reports";
import { type TestResults, addReport, emptyResults, testLabel } from "./results";
import { sendCodeowners } from "./codeowners";
import { runFailed } from "./failed";
import { runSplit } from "./split";
import { commentOnPullRequest } from "./pr-comment";
import { buildStepSummary } from "./summary";
import { type FileResolver, fileResolver } from "./test-files";
import { POLL_BASE_MS, type RunInfo, type UploadContext, readGroup, uploadGroup } from "./upload";
import { type GateDecision, describeGate, judgeGate } from "./verdicts";

// What the bin has always exported (tests import it).
export { DEFAULT_WAIT_TIMEOUT_S } from "./args";
export { detectCiMetadata, detectPullRequestBase } from "./ci-metadata";
export { DEEPEN_STEPS, resolveBaseCommit } from "./base-commit";
export { EXIT_OK, EXIT_REJECTED, EXIT_RUN_FAILED, EXIT_TESTS_FAILED, EXIT_UPLOAD_FAILED, EXIT_USAGE, UsageError } from "./exit-codes";
export { CACHE_MAX_AGE_MS, cacheFilePath, judgeFailures } from "./quarantine";
export { addReport, emptyResults } from "./results";
export { buildStepSummary, codeSpan, plainText } from "./summary";
export { defaultCacheDir } from "./args";
export {
  DEFAULT_BASE_DELAY_MS,
  DEFAULT_MAX_DELAY_MS,
  DEFAULT_REQUEST_TIMEOUT_MS,
  DEFAULT_RETRIES,
  MAX_RETRY_AFTER_MS,
  RETRYABLE_STATUSES,
  backoffDelay,
  describeHttpError,
  describeNetworkError,
  parseRetryAfter,
  realSleep,
  requestWithRetry,
} from "./http-retry";
export { MAX_BODY_BYTES, MAX_XML_DOCUMENTS, buildUpload, decodeReport, expandFiles } from "./reports";
export { readCheckout } from "./checkout";
export { MAX_WORKSPACE_ENTRIES, addFilesToJUnit, addFilesToSuites, fileResolver, indexWorkspace } from "./test-files";
export { POLL_BASE_MS, POLL_MAX_MS } from "./upload";
export { defaultRunKey, isRerunAttempt, parallelShard } from "./run-key";

/** Above this many files read for one run, a progress line is shown. */
const PROGRESS_FILE_THRESHOLD = 20;

export type RunIo = {
  env?: Env;
  cwd?: string;
  stdout?: Writable;
  stderr?: Writable;
  fetch?: typeof fetch;
  sleep?: Sleep;
  now?: () => number;
  random?: () => number;
  /** Overrides CTA_RETRY_BASE_MS and the 1 s default. */
  baseDelayMs?: number;
  pollBaseMs?: number;
  readEvent?: (path: string) => unknown;
  /** For the default cache folder (os.homedir() and process.platform otherwise). */
  homedir?: string;
  platform?: string;
  /** What `split -` and `failed -` read instead of stdin. */
  readStdin?: () => string;
};

/** Failure lines printed per group by --quarantine; the rest are counted. */
const MAX_PRINTED_FAILURES = 500;

/** The version in the package.json nearest above this module (the bundle's is the package root's). */
export function cliVersion(): string {
  try {
    let dir = dirname(fileURLToPath(import.meta.url));
    for (;;) {
      const path = join(dir, "package.json");
      if (existsSync(path)) {
        const pkg = JSON.parse(readFileSync(path, "utf8"));
        return typeof pkg.version === "string" ? pkg.version : "0.0.0";
      }
      const parent = dirname(dir);
      if (parent === dir) return "0.0.0";
      dir = parent;
    }
  } catch {
    return "0.0.0";
  }
}

function readJsonFile(path: string): unknown {
  return JSON.parse(readFileSync(path, "utf8"));
}

/** What the options and reports of one invocation are, once the command line is understood. */
type Command = { name: "upload" | "split" | "failed"; values: OptionValues; patterns: string[] };

/**
 * Run the CLI with `argv` (without node and the script). Resolves to the exit code; throws only
 * on a bug (main() turns that into exit 1).
 */
export async function run(argv: string[], io: RunIo = {}): Promise<number> {
  const env = io.env ?? process.env;
  const cwd = io.cwd ?? process.cwd();
  const stdout = io.stdout ?? process.stdout;
  const stderr = io.stderr ?? process.stderr;
  const candidate = tokenCandidate(argv, env);
  // Until the options are parsed, mask whatever could be the token.
  const early = new Output(stdout, stderr, { quiet: false, verbose: false, secrets: [candidate, env.CTA_UPLOAD_TOKEN ?? ""] });
  const command = readCommand(argv, early, stdout);
  if (typeof command === "number") return command;
  const { values, patterns } = command;

  const token = nonEmpty(values.token) ?? nonEmpty(env.CTA_UPLOAD_TOKEN);
  const baseUrl = nonEmpty(values.url) ?? nonEmpty(env.CTA_URL);
  const out = new Output(stdout, stderr, {
    quiet: Boolean(values.quiet),
    verbose: Boolean(values.verbose),
    secrets: [token ?? "", candidate, env.CTA_UPLOAD_TOKEN ?? "", env.GITHUB_TOKEN ?? ""],
    annotations: env.GITHUB_ACTIONS === "true",
  });
  if (command.name !== "upload") return runSelection(command, { token, baseUrl, env, cwd, io, out });
  const prepared = prepareUpload({ command, token, baseUrl, env, cwd, io, out });
  if (typeof prepared === "number") return prepared;
  const { settings, metadata } = prepared;
  const files = await findReports(patterns, cwd, out);
  if (typeof files === "number") return files;
  const { resolver, workspaceRoot } = await addCheckout(metadata, !values["no-resolve-files"], { env, cwd, out });
  await addBaseCommit(metadata, settings, { env, cwd, io, out });

  const summaryPath = nonEmpty(env.GITHUB_STEP_SUMMARY);
  const context = uploadContext({
    values,
    settings,
    metadata,
    token,
    cwd,
    io,
    out,
    resolver,
    workspaceRoot,
    wantFailedTests: summaryPath !== undefined,
  });
  // Before the reports: the service then gives the run's new tests their owners as it processes it.
  if (settings.codeownersFile) {
    const { headers, retryOptions } = context;
    await sendCodeowners({ file: settings.codeownersFile, url: settings.codeownersUrl, headers, retryOptions, out, cwd });
  }

  const quarantine = Boolean(values.quarantine);
  // The reports' own results, for --quarantine and the summary: read whether or not the upload works.
  const wantResults = quarantine || summaryPath !== undefined;
  const tally = await uploadReports(files, Boolean(values["run-per-file"]), wantResults, context);
  const incomplete = resolver?.index()?.incomplete;
  if (incomplete) out.info(`test files: none resolved from the workspace (${incomplete}); --no-resolve-files skips the look-up`);
  const judged = quarantine ? await judgeByQuarantine(tally, settings, token!, context) : null;
  const gate = settings.failOn === null ? null : judgeGate(tally.runs, tally.groups);
  if (gate !== null) printGate(gate, out);
  if (values["pr-comment"]) {
    const { retryOptions, headers } = context;
    const readEvent = io.readEvent ?? readJsonFile;
    await commentOnPullRequest({
      env,
      readEvent,
      runs: tally.runs,
      commitSha: metadata.commit_sha,
      variant: settings.variant,
      userAgent: headers["user-agent"]!,
      retryOptions,
      out,
    });
  }
  if (summaryPath !== undefined) appendStepSummary(summaryPath, tally, { judged, gate }, out);
  return exitCode(tally, judged, gate);
}

/** `split` and `failed` (docs/splitting.md): what to run, printed for the test command; a wrong command line is exit 2. */
async function runSelection(
  command: Command,
  input: { token: string | undefined; baseUrl: string | undefined; env: Env; cwd: string; io: RunIo; out: Output },
): Promise<number> {
  const { env, io, out } = input;
  const ci = detectCiMetadata(env, { readEvent: io.readEvent ?? readJsonFile }).provider;
  const retryOptions: RetryOptions = {
    fetch: io.fetch ?? globalThis.fetch,
    baseDelayMs: io.baseDelayMs ?? (Number(nonEmpty(env.CTA_RETRY_BASE_MS) ?? 1000) || 0),
    sleep: io.sleep ?? realSleep,
    now: io.now ?? Date.now,
    random: io.random,
  };
  const headers = {
    authorization: `Bearer ${input.token}`,
    "user-agent": `ci-test-analytics/${cliVersion()} node/${process.versions.node}`,
    accept: "application/json",
  };
  const shared = { ...input, values: command.values, patterns: command.patterns, ci, headers, retryOptions, readStdin: io.readStdin };
  try {
    return command.name === "split" ? await runSplit(shared) : await runFailed(shared);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    out.error(error.message);
    return EXIT_USAGE;
  }
}

/** --fail-on new's decision (stdout); not deciding is a warning: the exit code is then the default one. */
function printGate(gate: GateDecision, out: Output): void {
  const line = `Merge gate (--fail-on new): ${describeGate(gate)}`;
  if (gate.kind === "unknown") out.warn(line);
  else out.result(line);
}

/** The options and the report patterns, or the exit code when the command line ends the run (an error, --help, --version). */
function readCommand(argv: string[], out: Output, stdout: Writable): Command | number {
  let parsed: ReturnType<typeof parseCommandLine>;
  try {
    parsed = parseCommandLine(argv);
  } catch (error) {
    out.error((error as UsageError).message);
    return EXIT_USAGE;
  }
  const { values, positionals } = parsed;
  if (values.help) {
    stdout.write(HELP);
    return EXIT_OK;
  }
  if (values.version) {
    stdout.write(`${cliVersion()}\n`);
    return EXIT_OK;
  }
  const [command, ...patterns] = positionals;
  if (command !== "upload" && command !== "split" && command !== "failed") {
    out.error(
      command === undefined
        ? 'missing command: use "ci-test-analytics upload [options] FILES..." (--help for details)'
        : `unknown command "${command}" (the commands are "upload", "split" and "failed"; --help for details)`,
    );
    return EXIT_USAGE;
  }
  return { name: command, values, patterns };
}

/** The upload's settings and the run's metadata (flags over what the CI says), or EXIT_USAGE when they are wrong. */
function prepareUpload(input: {
  command: Command;
  token: string | undefined;
  baseUrl: string | undefined;
  env: Env;
  cwd: string;
  io: RunIo;
  out: Output;
}): { settings: UploadSettings; metadata: RunMetadata } | number {
  const { command, token, baseUrl, env, cwd, io, out } = input;
  const { values, patterns } = command;
  try {
    const ci = detectCiMetadata(env, { readEvent: io.readEvent ?? readJsonFile });
    const settings = uploadSettings({
      values,
      patterns,
      env,
      baseUrl,
      token,
      baseDelayMs: io.baseDelayMs,
      cwd,
      platform: io.platform ?? process.platform,
      homedir: io.homedir ?? homedir(),
      ci: ci.provider,
    });
    if (!hasTokenShape("uploadToken", token!)) {
      out.warn(
        `the token does not look like an upload token (${TOKEN_KINDS.uploadToken}_ followed by ${TOKEN_BODY_LENGTH} letters and digits)`,
      );
    }
    const metadata: RunMetadata = {
      branch: nonEmpty(values.branch) ?? ci.branch,
      commit_sha: nonEmpty(values["commit-sha"]) ?? ci.commit_sha,
      build_id: nonEmpty(values["build-id"]) ?? ci.build_id,
      build_url: nonEmpty(values["build-url"]) ?? ci.build_url,
      started_at: settings.startedAt,
      ...(settings.runKey !== undefined ? { run_key: settings.runKey } : {}),
      ...(settings.shard !== undefined ? { shard: settings.shard } : {}),
      ...(settings.retry ? { retry: true } : {}),
      ...(settings.variant !== "" ? { variant: settings.variant } : {}),
      tags: (values.tag ?? []).map((t) => t.trim()).filter((t) => t !== ""),
    };
    out.debug(`CI provider: ${ci.provider ?? "none detected"}`);
    if (settings.runKeyIsDefault) out.debug(`run key: ${settings.runKey} (the CI's run and job; --run-key or --no-run-key to change it)`);
    out.debug(`metadata: ${JSON.stringify(metadata)}`);
    return { settings, metadata };
  } catch (error) {
    if (error instanceof UsageError) {
      out.error(error.message);
      return EXIT_USAGE;
    }
    out.error(`unexpected: ${(error as Error)?.stack ?? error}`);
    return EXIT_USAGE;
  }
}

/**
 * What git says about the checkout: its branch and commit where the flags and the CI left them
 * empty (metadata.fromGit, below the JSON reports' own), and its top level, which test files are
 * resolved against (else the working directory). Returns the resolver, or null with
 * --no-resolve-files. Nothing here fails the upload.
 */
async function addCheckout(
  metadata: RunMetadata,
  resolveFiles: boolean,
  input: { env: Env; cwd: string; out: Output },
): Promise<{ resolver: FileResolver | null; workspaceRoot: string }> {
  const { env, cwd, out } = input;
  const head = metadata.branch === undefined || metadata.commit_sha === undefined;
  const checkout = await readCheckout({ cwd, env, head, root: true });
  // The workspace absolute test file paths are sent relative to: the checkout, else the CI's, else here.
  const workspaceRoot = checkout.root ?? resolve(cwd, nonEmpty(env.GITHUB_WORKSPACE) ?? nonEmpty(env.CI_PROJECT_DIR) ?? ".");
  const fromGit: NonNullable<RunMetadata["fromGit"]> = {};
  if (metadata.branch === undefined && checkout.branch !== undefined) fromGit.branch = checkout.branch;
  if (metadata.commit_sha === undefined && checkout.commit_sha !== undefined) fromGit.commit_sha = checkout.commit_sha;
  if (fromGit.branch !== undefined || fromGit.commit_sha !== undefined) {
    metadata.fromGit = fromGit;
    out.debug(`from git: ${JSON.stringify(fromGit)} (where the flags, the CI and the JSON reports give none)`);
  }
  if (!resolveFiles) return { resolver: null, workspaceRoot };
  const root = checkout.root ?? cwd;
  out.debug(`test files: resolved below ${root}`);
  return { resolver: fileResolver(root), workspaceRoot };
}

/** metadata.base_commit_sha, from --base-commit, git or the CI; whatever goes wrong is a notice, never an exit code. */
async function addBaseCommit(metadata: RunMetadata, settings: UploadSettings, input: { env: Env; cwd: string; io: RunIo; out: Output }) {
  const { env, cwd, io, out } = input;
  const outcome = await resolveBaseCommit({
    choice: settings.baseCommit,
    base: settings.baseCommit.mode === "detect" ? detectPullRequestBase(env, { readEvent: io.readEvent ?? readJsonFile }) : null,
    head: metadata.commit_sha,
    cwd,
    env,
  });
  if (outcome.notice !== undefined) out.info(outcome.notice);
  if (outcome.sha !== undefined) metadata.base_commit_sha = outcome.sha;
  out.debug(`base commit: ${outcome.sha ?? "none"} (${outcome.source})`);
}

/** The report files the patterns match, or EXIT_USAGE when they cannot be expanded or match nothing. */
async function findReports(patterns: string[], cwd: string, out: Output): Promise<string[] | number> {
  let files: string[];
  try {
    const expanded = await expandFiles(patterns, { cwd });
    for (const pattern of expanded.unmatched) out.warn(`no files match "${pattern}"`);
    files = expanded.files;
  } catch (error) {
    out.error(`cannot expand file patterns: ${(error as Error).message}`);
    return EXIT_USAGE;
  }
  if (files.length === 0) {
    out.error(`no report files matched ${patterns.map((p) => `"${p}"`).join(", ")}`);
    return EXIT_USAGE;
  }
  out.debug(`${files.length} file(s): ${files.map((f) => displayPath(f, cwd)).join(", ")}`);
  return files;
}

/** What every request of the upload shares: headers, retries, clock, and the --wait and --fail-on-upload-error choices. */
function uploadContext(input: {
  values: OptionValues;
  settings: UploadSettings;
  metadata: RunMetadata;
  token: string | undefined;
  cwd: string;
  io: RunIo;
  out: Output;
  resolver: FileResolver | null;
  workspaceRoot: string;
  wantFailedTests: boolean;
}): UploadContext {
  const { values, settings, metadata, token, cwd, io, out } = input;
  const sleep = io.sleep ?? realSleep;
  const now = io.now ?? Date.now;
  const retryOptions: RetryOptions = {
    fetch: io.fetch ?? globalThis.fetch,
    retries: settings.retries,
    baseDelayMs: settings.baseDelayMs,
    sleep,
    now,
    random: io.random,
    onRetry: (info) =>
      out.info(`attempt ${info.attempt}/${info.attempts} failed (${info.reason}); retrying in ${(info.delayMs / 1000).toFixed(1)} s`),
  };
  const headers: Record<string, string> = {
    authorization: `Bearer ${token}`,
    "user-agent": `ci-test-analytics/${cliVersion()} node/${process.versions.node}`,
    accept: "application/json",
  };
  return {
    out,
    cwd,
    headers,
    retryOptions,
    endpoint: settings.endpoint,
    metadata,
    resolver: input.resolver,
    workspaceRoot: input.workspaceRoot,
    // The gate and the comment rest on the verdicts, which exist once the run is processed.
    wait: Boolean(values.wait) || settings.failOn !== null || Boolean(values["pr-comment"]),
    waitTimeoutMs: settings.waitTimeoutS * 1000,
    waitDeadline: 0,
    sleep,
    now,
    pollBaseMs: io.pollBaseMs ?? POLL_BASE_MS,
    failOnUploadError: Boolean(values["fail-on-upload-error"]),
    // A first attempt's default key that another job completed: uploaded again without it (uploadGroup).
    runKeyFallback: settings.runKeyIsDefault && !settings.retry,
    wantFailedTests: input.wantFailedTests,
    verdictsDecide: settings.failOn !== null || Boolean(values["pr-comment"]),
  };
}

/** What the upload of every group gave: the tests' results (when wanted), the runs, the problems and each group's exit code. */
type UploadTally = {
  results: TestResults;
  runs: RunInfo[];
  problems: string[];
  codes: number[];
  serviceUnreachable: boolean;
  /** How many runs were to be uploaded (one, or one per file). */
  groups: number;
};

/**
 * Uploads the files as one run, or one run per file; once an upload says to stop, the remaining
 * groups are only read (when their results are wanted).
 */
async function uploadReports(files: string[], runPerFile: boolean, wantResults: boolean, context: UploadContext): Promise<UploadTally> {
  const { out } = context;
  const groups = runPerFile ? files.map((f) => [f]) : [files];
  const tally: UploadTally = {
    results: emptyResults(),
    runs: [],
    problems: [],
    codes: [],
    serviceUnreachable: false,
    groups: groups.length,
  };
  const { results, runs, problems, codes } = tally;
  const uploadProgress = groups.length > 1 ? out.progress("Uploading", groups.length) : null;
  let stopped: string | null = null;
  for (const group of groups) {
    if (stopped !== null) {
      // Not uploaded, but their tests still count for the verdict and the summary.
      if (!wantResults) break;
      const read = await readGroup(group, context);
      codes.push(read.code);
      for (const report of read.reports ?? []) addReport(results, report);
      continue;
    }
    const showReadProgress = groups.length === 1 && group.length > PROGRESS_FILE_THRESHOLD;
    const outcome = await uploadGroup(group, context, { showReadProgress });
    codes.push(outcome.code);
    uploadProgress?.tick();
    if (outcome.run) runs.push(outcome.run);
    if (outcome.problem && outcome.code !== EXIT_USAGE) problems.push(outcome.problem);
    if (wantResults) for (const report of outcome.reports ?? []) addReport(results, report);
    if (outcome.stop) {
      tally.serviceUnreachable = outcome.unreachable === true;
      if (codes.length < groups.length) {
        const message = `stopping: ${outcome.stop}; ${groups.length - codes.length} file(s) not uploaded`;
        if (outcome.code === EXIT_OK) out.warn(message);
        else out.error(message);
      }
      stopped = outcome.stop;
    }
  }
  if (groups.length > 1) {
    const ok = runs.length;
    out.info(`${ok} of ${groups.length} runs uploaded${ok < groups.length ? `, ${groups.length - ok} not` : ""}`);
  }
  return tally;
}

type Judged = { verdict: Verdict; lookup: QuarantineLookup };

/** --quarantine: the project's quarantine list (or its cached copy) against the reports' failures, printed. */
async function judgeByQuarantine(tally: UploadTally, settings: UploadSettings, token: string, context: UploadContext): Promise<Judged> {
  const { out, headers, retryOptions, now } = context;
  const lookup = await lookUpQuarantine({
    listUrl: settings.quarantineListUrl.href,
    token,
    headers,
    // The upload already found the service unreachable after its retries: one more try, not five.
    retryOptions: tally.serviceUnreachable ? { ...retryOptions, retries: 0 } : retryOptions,
    cacheDir: settings.cacheDir,
    now,
    onCacheError: (message) => out.warn(message),
  });
  const verdict = judgeFailures(tally.results.failures, lookup.list, now());
  printVerdict(out, tally.results, verdict, lookup);
  return { verdict, lookup };
}

/** GITHUB_STEP_SUMMARY: the Markdown summary appended; a file that cannot be written is only a warning. */
function appendStepSummary(
  summaryPath: string,
  tally: UploadTally,
  decisions: { judged: Judged | null; gate: GateDecision | null },
  out: Output,
): void {
  const { results, runs, problems } = tally;
  try {
    appendFileSync(summaryPath, buildStepSummary({ results, runs, problems, quarantine: decisions.judged, gate: decisions.gate }));
  } catch (error) {
    out.warn(`could not append the summary to GITHUB_STEP_SUMMARY (${summaryPath}): ${(error as Error).message}`);
  }
}

/**
 * The most actionable failure wins: usage, then rejection, then transport or tests, then
 * processing. The tests' part: --fail-on new's decision when it could make one, else --quarantine's.
 */
function exitCode(tally: UploadTally, judged: Judged | null, gate: GateDecision | null): number {
  const { codes, results } = tally;
  const testsFail =
    gate !== null && gate.kind !== "unknown"
      ? gate.kind === "fail"
      : judged !== null && (judged.verdict.notQuarantined.length > 0 || results.unreadable.length > 0);
  if (testsFail) codes.push(EXIT_TESTS_FAILED);
  for (const code of [EXIT_USAGE, EXIT_REJECTED, EXIT_UPLOAD_FAILED, EXIT_RUN_FAILED]) {
    if (codes.includes(code)) return code;
  }
  return EXIT_OK;
}

/** --quarantine's verdict: each failure, quarantined or not, and the conclusion (stdout). */
function printVerdict(out: Output, results: TestResults, verdict: Verdict, lookup: QuarantineLookup): void {
  if (lookup.problem) out.warn(lookup.problem);
  else out.info(`Quarantine: ${lookup.note}`);
  for (const { report, reason } of results.unreadable) {
    out.error(`cannot read the tests of ${report}: ${reason}; its results are unknown, so they count as a failure`);
  }
  const { counts } = results;
  const failing = counts.failed + counts.errored;
  out.result(
    `Tests: ${counts.tests} in all, ${counts.passed} passed, ${counts.failed} failed, ${counts.errored} errored, ${counts.skipped} skipped` +
      (failing > 0 ? `; ${verdict.quarantined.length} of the ${failing} failed or errored quarantined` : ""),
  );
  const lines = [
    ...verdict.notQuarantined.map((f) => `  not quarantined  ${testLabel(f)} (${f.status})`),
    ...verdict.quarantined.map(
      ({ failure, entry }) => `  quarantined      ${testLabel(failure)} (${failure.status}): ${entry.reason}, until ${entry.expires_at}`,
    ),
  ];
  for (const line of lines.slice(0, MAX_PRINTED_FAILURES)) out.result(line);
  if (lines.length > MAX_PRINTED_FAILURES) out.result(`  … and ${lines.length - MAX_PRINTED_FAILURES} more`);
  const open = verdict.notQuarantined.length;
  if (open > 0) {
    const names = verdict.notQuarantined.slice(0, 5).map(testLabel).join(", ");
    out.result(`Failing: ${open} failed or errored test(s) not quarantined: ${names}${open > 5 ? ", …" : ""}`);
  } else if (results.unreadable.length > 0) {
    out.result(`Failing: ${results.unreadable.length} report(s) could not be read`);
  } else if (failing > 0) {
    out.result("Passing: every failed or errored test is quarantined");
  } else {
    out.result("Passing: no failed or errored tests");
  }
}

/** Entry point for the bin: runs with the process's argv, env and streams. */
export async function main(io: RunIo = {}): Promise<void> {
  try {
    process.exitCode = await run(process.argv.slice(2), io);
  } catch (error) {
    const message = maskSecretShapes(String((error as Error)?.stack ?? error));
    process.stderr.write(`error: unexpected failure: ${message}\n`);
    process.exitCode = EXIT_UPLOAD_FAILED;
  }
}

function isMainModule(): boolean {
  const script = process.argv[1];
  if (!script) return false;
  try {
    return pathToFileURL(realpathSync(script)).href === pathToFileURL(realpathSync(fileURLToPath(import.meta.url))).href;
  } catch {
    return false;
  }
}

if (isMainModule()) await main();
