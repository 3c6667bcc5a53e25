/**
 * `ci-test-analytics failed` (docs/splitting.md, "Re-running only failures"): the runner's own
 * selector for the failed tests of the given reports, or of run NUMBER as the service stored it
 * (every page, never cut); nothing and exit 0 when nothing failed, so a retry step runs only them.
 */
import { type OptionValues, uploadsBase } from "./args";
import { EXIT_OK, EXIT_UPLOAD_FAILED, UsageError } from "./exit-codes";
import { nonEmpty } from "./format";
import { type RetryOptions, describeHttpError, describeNetworkError, requestWithRetry } from "./http-retry";
import type { Output } from "./output";
import { expandFiles, buildUpload } from "./reports";
import { addReport, emptyResults } from "./results";
import { type FailedCase, SELECTOR_FORMATS, type SelectorFormat, formatArgs, selectorArgs } from "./selectors";

/** Failures per page read from the service (its largest page). */
const PAGE_LIMIT = 100;

export async function runFailed(input: {
  values: OptionValues;
  patterns: string[];
  cwd: string;
  baseUrl: string | undefined;
  token: string | undefined;
  out: Output;
  headers: Record<string, string>;
  retryOptions: RetryOptions;
}): Promise<number> {
  const { values, patterns, out } = input;
  const format = values.format as SelectorFormat | undefined;
  if (format === undefined || !(SELECTOR_FORMATS as readonly string[]).includes(format))
    throw new UsageError(`failed needs --format, one of: ${SELECTOR_FORMATS.join(", ")}${format ? ` (got "${format}")` : ""}`);
  const runNumber = nonEmpty(values.run);
  if (runNumber !== undefined && patterns.length > 0) throw new UsageError("failed takes --run NUMBER or report files, not both");
  if (runNumber === undefined && patterns.length === 0) throw new UsageError("failed needs report files (or globs), or --run NUMBER");
  let failures: FailedCase[];
  if (runNumber === undefined) failures = await reportFailures(patterns, input.cwd);
  else {
    if (!/^[1-9]\d{0,9}$/.test(runNumber)) throw new UsageError(`--run must be a run number (got "${runNumber}")`);
    const read = await runFailures(runNumber, input);
    if (typeof read === "string") {
      out.error(`failed: cannot read the failures of run #${runNumber}: ${read}`);
      return EXIT_UPLOAD_FAILED;
    }
    failures = read;
  }
  out.raw(formatArgs(selectorArgs(failures, format)));
  return EXIT_OK;
}

/** The failed and errored cases of the reports, read as the uploader reads them. */
async function reportFailures(patterns: string[], cwd: string): Promise<FailedCase[]> {
  const { files } = await expandFiles(patterns, { cwd });
  if (files.length === 0) throw new UsageError(`no report files matched ${patterns.map((p) => `"${p}"`).join(", ")}`);
  const { reports } = await buildUpload(files, {}, { cwd, resolver: null });
  const results = emptyResults();
  for (const report of reports) addReport(results, report);
  if (results.unreadable.length > 0)
    throw new UsageError(`cannot read ${results.unreadable.map((u) => `${u.report}: ${u.reason}`).join("; ")}`);
  return results.failures;
}

/** The run's failing tests from the service, every page (its comparison's failures, docs/verdicts.md); a message when it cannot answer. */
async function runFailures(
  runNumber: string,
  input: { baseUrl: string | undefined; token: string | undefined; headers: Record<string, string>; retryOptions: RetryOptions },
): Promise<FailedCase[] | string> {
  if (input.baseUrl === undefined) throw new UsageError("--run needs the service: pass --url or set CTA_URL");
  if (input.token === undefined) throw new UsageError("--run needs the upload token: pass --token or set CTA_UPLOAD_TOKEN");
  const failures: FailedCase[] = [];
  let cursor: string | null = null;
  do {
    const url = new URL(`test_runs/${runNumber}/comparison/failures`, uploadsBase(input.baseUrl));
    url.searchParams.set("limit", String(PAGE_LIMIT));
    if (cursor !== null) url.searchParams.set("cursor", cursor);
    const result = await requestWithRetry(url.href, { method: "GET", headers: input.headers }, input.retryOptions);
    if (result.kind === "network-error") return describeNetworkError(result.error);
    if (result.status !== 200) return describeHttpError(result);
    const page = result.json as { data: (FailedCase & { status: string })[]; pagination: { next_cursor: string | null } };
    // A pass on retry is listed too (its verdict is flaky): it passed, so it is not re-run.
    for (const f of page.data)
      if (f.status === "failed" || f.status === "errored") failures.push({ classname: f.classname, name: f.name, file: f.file });
    cursor = page.pagination.next_cursor;
  } while (cursor !== null);
  return failures;
}
