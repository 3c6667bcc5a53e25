/**
 * Alert events in words (src/web/alert-sentences.tsx, issue 30): every alert type and every kind
 * of flakiness evidence the checks store reads as one sentence naming the test (a link to its
 * page), the run (a link), the commit's short SHA and the figure that tripped the check; the
 * statistics sit in a <details> disclosure. The metadata below is the checks' own shape (copied
 * from the demo's events, src/checks/*.ts).
 */
import { jsx } from "hono/jsx";
import { describe, expect, it } from "vitest";
import type { AlertType } from "../../src/lib/vocabulary";
import { type EventRun, EventSentence, EventStatistics } from "../../src/web/alert-sentences";

const PROJECT = "bbbcb565-a004-4afe-aec1-58e5600e32a8";
const TEST = "a26e0041-019b-afaf-3a31-520caa3d8aef";
const paths = { to: (path: string) => path };
const run: EventRun = { projectId: PROJECT, number: 35, branch: "main", commitSha: "59279f11c26007d01ce25a2ad5bca0b5fcd016fd" };

const html = async (node: unknown) => String(await (node as { toString(): string | Promise<string> }).toString());
const text = (markup: string) =>
  markup
    .replace(/<\/?(p|li|ul|dl|dt|dd|details|summary)\b[^>]*>/g, " ")
    .replace(/<[^>]+>/g, "")
    .replace(/&amp;/g, "&")
    .replace(/&#39;/g, "'")
    .replace(/\s+/g, " ")
    .replace(/ ([:.,])/g, "$1")
    .trim();
const sentence = (alertType: AlertType, metadata: unknown, at = run) => html(jsx(EventSentence, { alertType, metadata, run: at, paths }));
const statistics = (alertType: AlertType, metadata: unknown) =>
  html(jsx(EventStatistics, { alertType, metadata, projectId: PROJECT, paths }));

const flaky = (evidence: Record<string, unknown>[], extra: Record<string, unknown> = {}) => ({
  subject: "test",
  test_key: TEST,
  test_id: TEST,
  classname: "com.acme.checkout.OrderTest",
  name: "rejects empty input",
  rule: evidence[0]?.kind ?? "history_flips",
  run_number: 35,
  commit_sha: run.commitSha,
  window_runs: 24,
  failures: 2,
  passes: 22,
  failure_rate: 0.0833,
  failure_rate_ci95_low: 0.0232,
  failure_rate_ci95_high: 0.2585,
  flips: 2,
  flip_rate: 0.087,
  runs_test_z: -2.556,
  evidence,
  statistic: "evidence_count",
  observed: 1,
  threshold: 1,
  variant: "",
  ...extra,
});
const evidence = (kind: string, extra: Record<string, unknown> = {}) => ({
  kind,
  commit_sha: "69d74ac0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6",
  branch: "main",
  run_number: 4,
  on_default_branch: true,
  passed: 1,
  failed: 1,
  ...extra,
});

describe("flakiness events", () => {
  it("same commit: the issue's own sentence, the test and the run linked, the short SHA", async () => {
    const markup = await sentence("test_flakiness", flaky([evidence("same_commit")]));
    expect(text(markup)).toBe("OrderTest › rejects empty input failed and passed on the same commit 69d74ac in run #4 on main: flaky.");
    expect(markup).toContain(`href="/projects/${PROJECT}/tests/${TEST}"`);
    expect(markup).toContain(`href="/projects/${PROJECT}/runs/4"`);
  });

  it.each([
    ["passed_on_retry", {}, "OrderTest › rejects empty input failed, then passed on retry, in run #4 on main (commit 69d74ac): flaky."],
    [
      "same_commit_bursts",
      { failed: 3, passed: 1 },
      "OrderTest › rejects empty input failed in 3 runs of commit 69d74ac and passed in 1 other, the latest run #4 on main: flaky.",
    ],
    [
      "burst_recurred",
      {},
      "OrderTest › rejects empty input failed again together with the same group of tests in run #4 on main (commit 69d74ac), a co-failure that keeps coming back: flaky.",
    ],
    [
      "burst_same_commit",
      {},
      "OrderTest › rejects empty input failed beside many other tests and passed on the same commit 69d74ac in run #4 on main: flaky.",
    ],
  ])("%s evidence", async (kind, extra, expected) => {
    expect(text(await sentence("test_flakiness", flaky([evidence(kind, extra)])))).toBe(expected);
  });

  it("history flips: how often it switched in how many default-branch runs, at the event's run and commit", async () => {
    const metadata = flaky([], { rule: "history_flips", flips: 9, window_runs: 30, failures: 6, variant: "os=windows" });
    expect(text(await sentence("test_flakiness", metadata))).toBe(
      "OrderTest › rejects empty input switched between passing and failing 9 times in its last 30 default-branch runs (6 failures), as of run #35 (commit 59279f1) (variant os=windows): flaky.",
    );
  });

  it("the statistics behind a disclosure, in words; more flagged tests linked there", async () => {
    const metadata = flaky([evidence("same_commit")], { more_flagged_count: 2, more_flagged_test_keys: [TEST, "not-an-id"] });
    expect(text(await sentence("test_flakiness", metadata))).toContain("flaky; 2 more tests flagged in the same run");
    const markup = await statistics("test_flakiness", metadata);
    expect(markup.startsWith("<details")).toBe(true);
    expect(text(markup)).toContain("Failure rate 8.3 % (95 % interval 2.3 % to 26 %)");
    expect(text(markup)).toContain("newest first: the test failed and passed on the same commit 69d74ac in run #4 on main");
    expect(text(markup)).toContain("Evidence 1 distinct commit with evidence in 14 days; 1 needed");
    expect(markup.match(new RegExp(`/tests/${TEST}`, "g"))?.length).toBe(1);
  });
});

describe("run-level and duration events", () => {
  const spike = {
    subject: "run",
    run_number: 41,
    executed: 78,
    failed: 18,
    errored: 5,
    quarantined_failing_count: 2,
    failure_rate: 0.2949,
    baseline_failure_rate: 0.00669,
    p_value: 2.6e-10,
    alpha: 0.001,
    threshold_failures: 8,
    newly_failing_tests: ["computes large payloads #49"],
    newly_failing_count: 23,
    infra_suspect: false,
    infra_suspect_reason: null,
  };
  const at41 = { ...run, number: 41, commitSha: "4f621d4aa" };

  it("a failure-rate spike: how many failed of how many, against the usual rate", async () => {
    expect(text(await sentence("failure_rate_spike", spike, at41))).toBe(
      "23 tests of 78 failed in run #41 on main (commit 4f621d4): 29 % where about 0.7 % usually fail, a failure-rate spike (2 failures of quarantined tests not counted).",
    );
    const stats = text(await statistics("failure_rate_spike", spike));
    expect(stats).toContain("Chance of this many failures by luck 2.6e-10 (about 1 in 3,846,153,846); trips below 0.001");
    expect(stats).toContain("Newly failing tests (the first 1 of 23): computes large payloads #49");
  });

  it("a spike that looks like broken infrastructure says so", async () => {
    const outage = {
      ...spike,
      infra_suspect: true,
      infra_suspect_reason: "errors_outnumber_failures_tenfold",
      quarantined_failing_count: 0,
    };
    expect(text(await sentence("failure_rate_spike", outage, at41))).toContain(
      "errors outnumber failures tenfold, which looks like broken infrastructure.",
    );
  });

  it("skipped-test creep: skipped now, up from the baseline's run", async () => {
    const creep = {
      subject: "run",
      skipped_count: 23,
      total_tests: 67,
      baseline_skipped_count: 3,
      baseline_run_number: 13,
      delta: 20,
      pattern: "step",
    };
    const markup = await sentence("skipped_test_count_creep", creep, { ...run, number: 22, commitSha: "3a94653ff" });
    expect(text(markup)).toBe(
      "23 of 67 tests were skipped in run #22 on main (commit 3a94653), up from 3 at run #13: 20 more skipped tests, in one step.",
    );
    expect(markup).toContain(`/projects/${PROJECT}/runs/13"`);
  });

  it("a test's duration regression names the test, its medians and the runs compared", async () => {
    const slower = {
      subject: "test_duration",
      test_key: TEST,
      test_id: TEST,
      name: "retries large payloads #54",
      recent: { n: 20, median_ms: 835, from_run_number: 31, to_run_number: 51 },
      baseline: { n: 20, median_ms: 560, from_run_number: 2, to_run_number: 29 },
      rel_change: 0.4913,
      delta_ms: 275.1,
      p_value: 9.35e-7,
      alpha: 3.57e-6,
    };
    const markup = await sentence("performance_regression", slower, { ...run, number: 51, commitSha: "3127a88ff" });
    expect(text(markup)).toBe(
      "retries large payloads #54 got slower: its median took 835 ms in runs #31–#51, against 560 ms in runs #2–#29 (+49 %), as of run #51 (commit 3127a88).",
    );
    expect(markup).toContain(`/tests/${TEST}"`);
  });

  it("the run duration's regression, with its slowest tests linked in the disclosure", async () => {
    const slower = {
      subject: "run_duration",
      recent: { n: 8, median_ms: 90_000, from_run_number: 37, to_run_number: 44 },
      baseline: { n: 20, median_ms: 60_000, from_run_number: 10, to_run_number: 29 },
      rel_change: 0.5,
      top_contributors: [{ test_key: TEST, name: "loads total #5", baseline_median_ms: 100, recent_median_ms: 900, delta_ms: 800 }],
    };
    expect(text(await sentence("performance_regression", slower, { ...run, number: 44, commitSha: null }))).toBe(
      "Runs got slower: the median run took 1 min 30 s in runs #37–#44, against 1 min 00 s in runs #10–#29 (+50 %), as of run #44 (commit no commit).",
    );
    const stats = await statistics("performance_regression", slower);
    expect(text(stats)).toContain("The tests that slowed down most: loads total #5 100 ms → 900 ms (+800 ms)");
    expect(stats).toContain(`/tests/${TEST}"`);
  });
});

describe("what the sentence cannot read", () => {
  it("metadata cut to its size cap says so; script in a name stays text", async () => {
    expect(text(await sentence("failure_rate_spike", { truncated: true, detector_version: "x" }))).toBe(
      "The check tripped on run #35 (commit 59279f1); its details were too large to keep.",
    );
    const markup = await sentence("test_flakiness", flaky([evidence("same_commit")], { name: "<script>alert(1)</script>" }));
    expect(markup).not.toContain("<script>");
    expect(text(await sentence("skipped_test_count_creep", {}))).toBe(
      "More of the tests were skipped in run #35 on main (commit 59279f1): more skipped tests, in one step.",
    );
  });
});
