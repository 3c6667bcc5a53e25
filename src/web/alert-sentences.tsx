/**
 * An alert event in words (issue 30): one sentence that says what happened, naming the test (a
 * link to its page), the run (a link), the commit's short SHA and the figure that tripped the
 * check, in plain words; the statistics behind it (p-values, baselines, thresholds) in a
 * `<details>` disclosure, read as labelled figures, with every stored key at the bottom for
 * whoever needs them. Used by the alert pages and the run page. The metadata is each check's
 * (src/checks, docs/alert-checks.md); stored events of older detector versions, truncated metadata
 * or a key missing fall back to a plainer sentence, never to an error.
 */
import type { Child, FC } from "hono/jsx";
import { isUuid } from "../lib/ids";
import type { AlertType } from "../lib/vocabulary";
import { Metadata, durationText } from "./components";
import type { WebPaths } from "./env";

/** The run an event judged, as the sentence names it. */
export type EventRun = { projectId: string; number: number; branch: string | null; commitSha: string | null };

type Meta = Record<string, unknown>;
type Links = { paths: WebPaths; projectId: string };

const num = (m: Meta, key: string): number | null => (typeof m[key] === "number" && Number.isFinite(m[key]) ? (m[key] as number) : null);
const str = (m: Meta, key: string): string | null => (typeof m[key] === "string" && m[key] !== "" ? (m[key] as string) : null);
const obj = (m: Meta, key: string): Meta =>
  typeof m[key] === "object" && m[key] !== null && !Array.isArray(m[key]) ? (m[key] as Meta) : {};
const list = (m: Meta, key: string): unknown[] => (Array.isArray(m[key]) ? (m[key] as unknown[]) : []);

/** 0.2949 → "29.5 %"; 0.00669 → "0.7 %". */
const rateText = (rate: number) => `${(rate * 100).toFixed(rate !== 0 && Math.abs(rate) < 0.1 ? 1 : 0)} %`;
const msText = (ms: number | null) => durationText(ms === null ? null : Math.round(ms));
/** A p-value as people read it: "1 in 3.8 million" beside the number. */
const pText = (p: number) => (p <= 0 ? "below 1 in 10¹⁵" : `${p.toPrecision(2)} (about 1 in ${Math.round(1 / p).toLocaleString("en")})`);
/** A threshold as read: 0.001, 3.6e-6. */
const smallText = (value: number | null) => (value === null ? "?" : value >= 0.001 ? String(value) : value.toPrecision(2));
const plural = (count: number, one: string, many = `${one}s`) => `${count.toLocaleString("en")} ${count === 1 ? one : many}`;

/** The commit's first 7 characters, as git shows it. */
const Sha: FC<{ sha: string | null }> = ({ sha }) => (sha ? <code title={sha}>{sha.slice(0, 7)}</code> : <>no commit</>);

const RunLink: FC<Links & { number: number }> = ({ paths, projectId, number }) => (
  <a href={paths.to(`/projects/${projectId}/runs/${number}`)}>run #{number}</a>
);

/** "OrderTest › rejects empty input": the classname's last part, then the name. */
function testTitle(classname: string | null, name: string | null): string {
  const short = classname ? classname.split(".").pop() : null;
  return short ? `${short} › ${name ?? "?"}` : (name ?? "a test");
}

/** The test an event names, a link to its page when the event carries its id. */
const TestLink: FC<Links & { m: Meta }> = ({ paths, projectId, m }) => {
  const id = str(m, "test_id") ?? str(m, "test_key");
  const named = str(m, "name") !== null;
  const title = <code>{named || !id ? testTitle(str(m, "classname"), str(m, "name")) : `test ${id.slice(0, 8)}`}</code>;
  return id && isUuid(id) ? <a href={paths.to(`/projects/${projectId}/tests/${id}`)}>{title}</a> : title;
};

/** " on feature/x" for a run off the default branch (the branch is named when known). */
const onBranch = (branch: string | null) => (branch ? ` on ${branch}` : "");
const variantText = (m: Meta) => (str(m, "variant") ? ` (variant ${str(m, "variant")})` : "");

type SentenceProps = Links & { m: Meta; run: EventRun };

/** The newest piece of evidence (the check lists them newest first), else null. */
function newestEvidence(m: Meta): Meta | null {
  const first = list(m, "evidence")[0];
  return typeof first === "object" && first !== null ? (first as Meta) : null;
}

/** How the newest piece of evidence reads: "failed and passed on the same commit 69d74ac in run #4". */
const EvidenceWords: FC<Links & { e: Meta; fallbackRun: number }> = ({ e, fallbackRun, ...links }) => {
  const run = <RunLink {...links} number={num(e, "run_number") ?? fallbackRun} />;
  const sha = <Sha sha={str(e, "commit_sha")} />;
  const failed = num(e, "failed") ?? 1;
  const passed = num(e, "passed") ?? 1;
  const where = onBranch(str(e, "branch"));
  switch (str(e, "kind")) {
    case "same_commit":
      return (
        <>
          failed and passed on the same commit {sha} in {run}
          {where}
        </>
      );
    case "passed_on_retry":
      return (
        <>
          failed, then passed on retry, in {run}
          {where} (commit {sha})
        </>
      );
    case "same_commit_bursts":
      return (
        <>
          failed in {plural(failed, "run")} of commit {sha} and passed in {plural(passed, "other")}, the latest {run}
          {where}
        </>
      );
    case "burst_recurred":
      return (
        <>
          failed again together with the same group of tests in {run}
          {where} (commit {sha}), a co-failure that keeps coming back
        </>
      );
    case "burst_same_commit":
      return (
        <>
          failed beside many other tests and passed on the same commit {sha} in {run}
          {where}
        </>
      );
    default:
      return (
        <>
          showed a sign of flakiness in {run} (commit {sha})
        </>
      );
  }
};

const FlakySentence: FC<SentenceProps> = ({ m, run, ...links }) => {
  const evidence = newestEvidence(m);
  const more = num(m, "more_flagged_count");
  const tail = more ? `; ${plural(more, "more test")} flagged in the same run are listed with its figures` : "";
  if (str(m, "rule") === "history_flips" || !evidence) {
    const flips = num(m, "flips");
    const window = num(m, "window_runs");
    const failures = num(m, "failures");
    return (
      <>
        <TestLink {...links} m={m} /> switched between passing and failing {flips === null ? "often" : plural(flips, "time")}
        {window !== null ? ` in its last ${plural(window, "default-branch run")}` : ""}
        {failures !== null ? ` (${plural(failures, "failure")})` : ""}, as of <RunLink {...links} number={run.number} /> (commit{" "}
        <Sha sha={run.commitSha} />){variantText(m)}: flaky{tail}.
      </>
    );
  }
  return (
    <>
      <TestLink {...links} m={m} /> <EvidenceWords {...links} e={evidence} fallbackRun={run.number} />
      {variantText(m)}: flaky{tail}.
    </>
  );
};

const SpikeSentence: FC<SentenceProps> = ({ m, run, ...links }) => {
  const failing = (num(m, "failed") ?? 0) + (num(m, "errored") ?? 0);
  const executed = num(m, "executed");
  const rate = num(m, "failure_rate");
  const usual = num(m, "baseline_failure_rate");
  const quarantined = num(m, "quarantined_failing_count") ?? 0;
  const reason = str(m, "infra_suspect_reason");
  return (
    <>
      {plural(failing, "test")} of {executed ?? "?"} failed in <RunLink {...links} number={run.number} />
      {onBranch(run.branch)} (commit <Sha sha={run.commitSha} />){variantText(m)}: {rate !== null ? rateText(rate) : "a failure rate"}
      {usual !== null ? ` where about ${rateText(usual)} usually fail` : ""}, a failure-rate spike
      {quarantined > 0 ? ` (${plural(quarantined, "failure")} of quarantined tests not counted)` : ""}
      {m.infra_suspect === true
        ? reason === "errors_outnumber_failures_tenfold"
          ? "; errors outnumber failures tenfold, which looks like broken infrastructure"
          : "; most of the tests it judged newly failed, which looks like broken infrastructure"
        : ""}
      .
    </>
  );
};

const SkippedSentence: FC<SentenceProps> = ({ m, run, ...links }) => {
  const skipped = num(m, "skipped_count");
  const total = num(m, "total_tests");
  const before = num(m, "baseline_skipped_count");
  const beforeRun = num(m, "baseline_run_number");
  const delta = num(m, "delta");
  return (
    <>
      {skipped ?? "More"} of {total ?? "the"} tests were skipped in <RunLink {...links} number={run.number} />
      {onBranch(run.branch)} (commit <Sha sha={run.commitSha} />){variantText(m)}
      {before !== null ? (
        <>
          , up from {before}
          {beforeRun !== null ? (
            <>
              {" "}
              at <RunLink {...links} number={beforeRun} />
            </>
          ) : null}
        </>
      ) : null}
      : {delta !== null ? plural(delta, "more skipped test") : "more skipped tests"}
      {str(m, "pattern") === "gradual" ? ", creeping up run by run" : ", in one step"}.
    </>
  );
};

/** "runs #31–#51" (a link to each end). */
const RunRange: FC<Links & { range: Meta }> = ({ range, ...links }) => {
  const from = num(range, "from_run_number");
  const to = num(range, "to_run_number");
  if (from === null || to === null) return <>its runs</>;
  return (
    <>
      runs <a href={links.paths.to(`/projects/${links.projectId}/runs/${from}`)}>#{from}</a>–
      <a href={links.paths.to(`/projects/${links.projectId}/runs/${to}`)}>#{to}</a>
    </>
  );
};

const SlowerSentence: FC<SentenceProps> = ({ m, run, ...links }) => {
  const recent = obj(m, "recent");
  const baseline = obj(m, "baseline");
  const rel = num(m, "rel_change");
  const subject =
    str(m, "subject") === "run_duration" ? (
      <>Runs got slower: the median run took</>
    ) : (
      <>
        <TestLink {...links} m={m} /> got slower: its median took
      </>
    );
  return (
    <>
      {subject} {msText(num(recent, "median_ms"))} in <RunRange {...links} range={recent} />, against {msText(num(baseline, "median_ms"))}{" "}
      in <RunRange {...links} range={baseline} />
      {rel !== null ? ` (${rel >= 0 ? "+" : ""}${rateText(rel)})` : ""}, as of <RunLink {...links} number={run.number} /> (commit{" "}
      <Sha sha={run.commitSha} />){variantText(m)}.
    </>
  );
};

const SENTENCES: Record<AlertType, FC<SentenceProps>> = {
  test_flakiness: FlakySentence,
  failure_rate_spike: SpikeSentence,
  skipped_test_count_creep: SkippedSentence,
  performance_regression: SlowerSentence,
};

/** The event's sentence; metadata cut to its size cap (`truncated`) says so instead. */
export const EventSentence: FC<{ alertType: AlertType; metadata: unknown; run: EventRun; paths: WebPaths }> = ({
  alertType,
  metadata,
  run,
  paths,
}) => {
  const m = (typeof metadata === "object" && metadata !== null ? metadata : {}) as Meta;
  const links = { paths, projectId: run.projectId };
  if (m.truncated === true && Object.keys(m).length <= 2) {
    return (
      <p class="event-sentence">
        The check tripped on <RunLink {...links} number={run.number} /> (commit <Sha sha={run.commitSha} />
        ); its details were too large to keep.
      </p>
    );
  }
  const Sentence = SENTENCES[alertType];
  return (
    <p class="event-sentence">
      <Sentence {...links} m={m} run={run} />
    </p>
  );
};

/** A figure of the disclosure: its label and its value in words. */
type Figure = [label: string, value: Child];

function flakyFigures(m: Meta): Figure[] {
  const figures: Figure[] = [];
  const rate = num(m, "failure_rate");
  const low = num(m, "failure_rate_ci95_low");
  const high = num(m, "failure_rate_ci95_high");
  if (num(m, "window_runs") !== null)
    figures.push([
      "Default-branch window",
      `${plural(num(m, "window_runs")!, "run")}: ${plural(num(m, "failures") ?? 0, "failure")}, ${plural(num(m, "passes") ?? 0, "pass", "passes")}`,
    ]);
  if (rate !== null)
    figures.push([
      "Failure rate",
      `${rateText(rate)}${low !== null && high !== null ? ` (95 % interval ${rateText(low)} to ${rateText(high)})` : ""}`,
    ]);
  if (num(m, "flips") !== null)
    figures.push(["Flips", `${num(m, "flips")}${num(m, "flip_rate") !== null ? ` (flip rate ${rateText(num(m, "flip_rate")!)})` : ""}`]);
  if (num(m, "runs_test_z") !== null) figures.push(["Runs test z", String(num(m, "runs_test_z"))]);
  const observed = num(m, "observed");
  const threshold = num(m, "threshold");
  if (str(m, "statistic") === "evidence_count" && observed !== null)
    figures.push(["Evidence", `${plural(observed, "distinct commit")} with evidence in 14 days; ${threshold ?? "?"} needed`]);
  if (str(m, "statistic") === "runs_test_z" && threshold !== null) figures.push(["Trips when z is at most", String(threshold)]);
  return figures;
}

function spikeFigures(m: Meta): Figure[] {
  const figures: Figure[] = [];
  const p = num(m, "p_value");
  if (num(m, "executed") !== null)
    figures.push(["Failing", `${num(m, "failed") ?? 0} failed and ${num(m, "errored") ?? 0} errored of ${num(m, "executed")} executed`]);
  if (num(m, "baseline_failure_rate") !== null)
    figures.push([
      "Usual failure rate",
      `${rateText(num(m, "baseline_failure_rate")!)}${num(m, "baseline_effective_runs") !== null ? ` (about ${num(m, "baseline_effective_runs")} runs' worth of history)` : ""}`,
    ]);
  if (num(m, "threshold_failures") !== null) figures.push(["Trips at", `${plural(num(m, "threshold_failures")!, "failing test")} or more`]);
  if (p !== null) figures.push(["Chance of this many failures by luck", `${pText(p)}; trips below ${smallText(num(m, "alpha"))}`]);
  if (num(m, "newly_failing_count") !== null)
    figures.push(["Newly failing", `${num(m, "newly_failing_count")} (failing now, passing last time)`]);
  return figures;
}

function skippedFigures(m: Meta): Figure[] {
  const figures: Figure[] = [];
  if (num(m, "observed") !== null)
    figures.push(["Skipped, median of the last 5 runs", `${num(m, "observed")}; trips at ${num(m, "threshold") ?? "?"}`]);
  if (num(m, "mann_kendall_p") !== null) figures.push(["Trend test (Mann–Kendall)", pText(num(m, "mann_kendall_p")!)]);
  if (num(m, "newly_skipped_count") !== null) figures.push(["Newly skipped", String(num(m, "newly_skipped_count"))]);
  if (num(m, "newly_unskipped_count") !== null) figures.push(["Skipped before, running again", String(num(m, "newly_unskipped_count"))]);
  return figures;
}

function slowerFigures(m: Meta): Figure[] {
  const figures: Figure[] = [];
  const baseline = obj(m, "baseline");
  const recent = obj(m, "recent");
  if (num(recent, "n") !== null) figures.push(["Recent runs", `${num(recent, "n")}, median ${msText(num(recent, "median_ms"))}`]);
  if (num(baseline, "n") !== null) figures.push(["Baseline runs", `${num(baseline, "n")}, median ${msText(num(baseline, "median_ms"))}`]);
  if (num(m, "delta_ms") !== null) figures.push(["Slower by", msText(num(m, "delta_ms"))]);
  if (num(m, "threshold") !== null) figures.push(["Trips above a median of", msText(num(m, "threshold"))]);
  if (num(m, "p_value") !== null)
    figures.push(["Chance of this by luck (Mann–Whitney)", `${pText(num(m, "p_value")!)}; trips below ${smallText(num(m, "alpha"))}`]);
  return figures;
}

const FIGURES: Record<AlertType, (m: Meta) => Figure[]> = {
  test_flakiness: flakyFigures,
  failure_rate_spike: spikeFigures,
  skipped_test_count_creep: skippedFigures,
  performance_regression: slowerFigures,
};

/** Names of tests an event lists (newly failing, newly skipped): as text, since events keep their names only. */
const NameList: FC<{ heading: string; names: unknown[]; total: number | null }> = ({ heading, names, total }) =>
  names.length === 0 ? null : (
    <>
      <p>
        {heading}
        {total !== null && total > names.length ? ` (the first ${names.length} of ${total})` : ""}:
      </p>
      <ul class="event-tests">
        {names.map((name) => (
          <li>
            <code>{String(name)}</code>
          </li>
        ))}
      </ul>
    </>
  );

/** Tests an event lists with their ids (a run's slowest contributors, more regressed or flagged tests): links to their pages. */
const TestRows: FC<Links & { heading: string; rows: unknown[]; duration?: boolean }> = ({ heading, rows, duration, ...links }) => {
  const tests = rows.filter((row): row is Meta => typeof row === "object" && row !== null);
  if (tests.length === 0) return null;
  return (
    <>
      <p>{heading}:</p>
      <ul class="event-tests">
        {tests.map((row) => (
          <li>
            <TestLink {...links} m={row} />
            {duration
              ? ` ${msText(num(row, "baseline_median_ms"))} → ${msText(num(row, "recent_median_ms"))} (+${msText(num(row, "delta_ms"))})`
              : ""}
          </li>
        ))}
      </ul>
    </>
  );
};

/** Every piece of flakiness evidence the event lists (newest first), in words. */
const EvidenceList: FC<Links & { m: Meta; fallbackRun: number }> = ({ m, fallbackRun, ...links }) => {
  const pieces = list(m, "evidence").filter((item): item is Meta => typeof item === "object" && item !== null);
  if (pieces.length === 0) return null;
  return (
    <>
      <p>Signs of flakiness in the last 14 days, newest first: the test</p>
      <ul class="event-tests">
        {pieces.map((piece) => (
          <li>
            <EvidenceWords {...links} e={piece} fallbackRun={fallbackRun} />
            {piece.on_default_branch === false ? " (off the default branch)" : ""}
          </li>
        ))}
      </ul>
    </>
  );
};

/** The flagged tests beyond the run's first 50 events: their ids only (the check lists keys). */
const moreFlagged = (m: Meta) => list(m, "more_flagged_test_keys").map((key) => ({ test_key: key, name: null }));

/** The statistics behind the sentence, in a disclosure: the figures in words, the listed tests, then every stored key. */
export const EventStatistics: FC<{ alertType: AlertType; metadata: unknown; projectId: string; paths: WebPaths }> = ({
  alertType,
  metadata,
  projectId,
  paths,
}) => {
  const m = (typeof metadata === "object" && metadata !== null ? metadata : {}) as Meta;
  const links = { paths, projectId };
  const figures = FIGURES[alertType](m);
  return (
    <details class="event-statistics">
      <summary>The figures behind it</summary>
      {figures.length > 0 ? (
        <dl class="facts">
          {figures.map(([label, value]) => (
            <>
              <dt>{label}</dt>
              <dd>{value}</dd>
            </>
          ))}
        </dl>
      ) : null}
      <EvidenceList {...links} m={m} fallbackRun={num(m, "run_number") ?? 0} />
      <NameList heading="Newly failing tests" names={list(m, "newly_failing_tests")} total={num(m, "newly_failing_count")} />
      <NameList heading="Newly skipped tests" names={list(m, "newly_skipped_tests")} total={num(m, "newly_skipped_count")} />
      <TestRows {...links} heading="The tests that slowed down most" rows={list(m, "top_contributors")} duration />
      <TestRows {...links} heading="Other tests that slowed down in this run" rows={list(m, "more_regressed_tests")} duration />
      <TestRows {...links} heading="Other tests flagged in this run" rows={moreFlagged(m)} />
      <details class="event-raw">
        <summary>Every recorded value</summary>
        <Metadata metadata={m} />
      </details>
    </details>
  );
};
