/**
 * A simulated run as its tool's JUnit XML (Surefire or Gradle) and as the summary the service
 * derives from that XML, so the checks can be fed either way and give the same answer.
 */
import type { CaseStatus, RunSummary, RunTest } from "../checks/types";
import { parseSeconds } from "../ingest/junit";
import type { SimRun, SimTest } from "./stream-types";

/** Seconds as the JUnit `time` attribute, with the stream's decimals. */
export function formatSeconds(ms: number, decimals: number): string {
  return (ms / 1000).toFixed(decimals);
}

function escapeXml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

type SuiteGroup = { name: string; tests: SimTest[] };

function groupBySuite(tests: readonly SimTest[]): SuiteGroup[] {
  const groups: SuiteGroup[] = [];
  const byName = new Map<string, SuiteGroup>();
  for (const test of tests) {
    let group = byName.get(test.suite);
    if (!group) {
      group = { name: test.suite, tests: [] };
      byName.set(test.suite, group);
      groups.push(group);
    }
    group.tests.push(test);
  }
  return groups;
}

/** Time spent in a suite: every attempt and final execution (each already quantised). */
function suiteTimeMs(group: SuiteGroup): number {
  let ms = 0;
  for (const t of group.tests) {
    ms += t.durationMs;
    for (const a of t.attempts) ms += a.durationMs;
  }
  return ms;
}

/** The duration the service stores: `<testsuites time>` when written, else the sum of the top-level suites. */
export function storedDuration(run: SimRun): number {
  if (run.wall_clock_ms !== null) return parseSeconds(formatSeconds(run.wall_clock_ms, 3))!;
  let sum = 0;
  for (const group of groupBySuite(run.tests)) sum += parseSeconds(formatSeconds(suiteTimeMs(group), run.time_decimals)) ?? 0;
  return Math.round(sum);
}

function outcomeElement(status: CaseStatus, message: string | null, indent: string): string {
  const text = escapeXml(message ?? "failed");
  if (status === "failed")
    return `${indent}<failure message="${text}" type="java.lang.AssertionError">${text}\n${indent}  at com.acme.Test.run(Test.java:42)</failure>\n`;
  if (status === "errored") return `${indent}<error message="${text}" type="java.lang.RuntimeException">${text}</error>\n`;
  if (status === "skipped") return `${indent}<skipped message="disabled"/>\n`;
  return "";
}

/**
 * The run as a JUnit XML document, as the stream's tool writes it:
 * - Surefire: one `<testcase>` per test; earlier failed attempts are `<flakyFailure>`/`<flakyError>`
 *   when the test finally passed, `<rerunFailure>`/`<rerunError>` when it failed every time.
 * - Gradle (mergeReruns off): every execution is its own `<testcase>`; retries come after the
 *   suite's first round, so the parser must merge them back to the first position.
 * `<testsuites time>` carries the wall clock when the stream reports one.
 */
export function toJUnitXml(run: SimRun): string {
  const d = run.time_decimals;
  const out: string[] = ['<?xml version="1.0" encoding="UTF-8"?>\n'];
  const rootTime = run.wall_clock_ms !== null ? ` time="${formatSeconds(run.wall_clock_ms, 3)}"` : "";
  out.push(`<testsuites name="${escapeXml(run.branch)}"${rootTime}>\n`);
  for (const group of groupBySuite(run.tests)) {
    const failures = group.tests.filter((t) => t.status === "failed").length;
    const errors = group.tests.filter((t) => t.status === "errored").length;
    const skipped = group.tests.filter((t) => t.status === "skipped").length;
    out.push(
      `  <testsuite name="${escapeXml(group.name)}" tests="${group.tests.length}" failures="${failures}" errors="${errors}" skipped="${skipped}" time="${formatSeconds(suiteTimeMs(group), d)}" timestamp="${run.created_at.slice(0, 19)}">\n`,
    );
    const open = (t: SimTest, ms: number) =>
      `    <testcase name="${escapeXml(t.name)}" classname="${escapeXml(t.classname)}" time="${formatSeconds(ms, d)}"`;
    if (run.format === "surefire") {
      for (const t of group.tests) {
        if (t.attempts.length === 0 && t.status === "passed") {
          out.push(`${open(t, t.durationMs)}/>\n`);
          continue;
        }
        out.push(`${open(t, t.durationMs)}>\n`);
        out.push(outcomeElement(t.status, t.message, "      "));
        for (const a of t.attempts) {
          const tag =
            t.status === "passed"
              ? a.status === "errored"
                ? "flakyError"
                : "flakyFailure"
              : a.status === "errored"
                ? "rerunError"
                : "rerunFailure";
          const msg = escapeXml(t.message ?? "failed on an earlier attempt");
          out.push(
            `      <${tag} message="${msg}" type="java.lang.AssertionError" time="${formatSeconds(a.durationMs, d)}">\n        <stackTrace>${msg}</stackTrace>\n      </${tag}>\n`,
          );
        }
        out.push("    </testcase>\n");
      }
    } else {
      // Gradle: round 0 is every test's first execution; round k its k-th retry.
      const rounds = Math.max(0, ...group.tests.map((t) => t.attempts.length));
      for (let round = 0; round <= rounds; round++) {
        for (const t of group.tests) {
          if (round > t.attempts.length) continue;
          const isFinal = round === t.attempts.length;
          const status = isFinal ? t.status : t.attempts[round]!.status;
          const ms = isFinal ? t.durationMs : t.attempts[round]!.durationMs;
          const body = outcomeElement(status, isFinal ? t.message : (t.message ?? "failed on an earlier attempt"), "      ");
          out.push(body === "" ? `${open(t, ms)}/>\n` : `${open(t, ms)}>\n${body}    </testcase>\n`);
        }
      }
    }
    out.push("  </testsuite>\n");
  }
  out.push("</testsuites>\n");
  return out.join("");
}

/**
 * What the checks see of this run once the service has stored it: keys from (suite, classname,
 * name), statuses after the retry merge, attempts' statuses, case durations and the run duration
 * as parsed from toJUnitXml. `runId` defaults to the run number; `createdAt` is the simulated
 * start time (the service stamps its arrival time instead).
 */
export function toRunSummary(run: SimRun, options: { runId?: number; defaultBranch?: string } = {}): RunSummary {
  const defaultBranch = options.defaultBranch ?? "main";
  const counts = { tests: 0, passed: 0, failed: 0, errored: 0, skipped: 0 };
  const tests: RunTest[] = [];
  for (const group of groupBySuite(run.tests)) {
    for (const t of group.tests) {
      counts.tests++;
      counts[t.status]++;
      tests.push({
        key: t.key,
        suite: group.name,
        classname: t.classname,
        name: t.name,
        status: t.status,
        attempts: t.attempts.map((a) => a.status),
        durationMs: parseSeconds(formatSeconds(t.durationMs, run.time_decimals)),
      });
    }
  }
  return {
    runId: options.runId ?? run.number,
    number: run.number,
    branch: run.branch,
    commitSha: run.commit_sha,
    createdAt: new Date(run.created_at),
    durationMs: run.duration,
    onDefaultBranch: run.branch === defaultBranch,
    counts,
    tests,
  };
}
