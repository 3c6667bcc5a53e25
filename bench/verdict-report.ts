/** The verdicts' section of the detection report: the figures of bench/verdict-bench.ts as markdown, and their targets. */
import { VERDICTS } from "../src/lib/vocabulary";
import { DEFAULT_VERDICT_RATES } from "../src/simulator/verdict-streams";
import { type VerdictScore, mergeScores, precisionOfNew, recallOfNew, shareText } from "./verdict-scoring";

const TARGET = 0.95;
const COLUMNS = [...VERDICTS, "(none)"];

type ReportInput = {
  family: VerdictScore;
  corpus: VerdictScore;
  familySeeds: number[];
  familyOptions: { tests: number; warmupRuns: number; scenarioCommits: number };
  corpusSeeds: number[];
  corpusText: string;
  seconds: number;
  storedRuns: number;
};

const passText = (value: number) => (Number.isNaN(value) ? "n/a" : value >= TARGET ? "PASS" : "FAIL");
const seedsText = (seeds: number[]) => (seeds.length === 0 ? "none" : `${seeds[0]}–${seeds.at(-1)} (${seeds.length} streams)`);
const cellOf = (table: Map<string, Map<string, number>>, row: string, column: string) => table.get(row)?.get(column) ?? 0;
const rowTotal = (table: Map<string, Map<string, number>>, row: string) => [...(table.get(row)?.values() ?? [])].reduce((a, b) => a + b, 0);

function method(input: ReportInput): string[] {
  const r = DEFAULT_VERDICT_RATES;
  const o = input.familyOptions;
  return [
    "### Verdicts: each failure's verdict against the truth (issue 28)",
    "",
    `Every stream below is stored by the service run by run on a Postgres database made for the run, one project per stream, as the queue consumer stores an upload: the run's arrival (branch, commit, \`base_commit_sha\`, start time; the clock at the run's start), \`processTestRun\` on its JUnit XML (which compares the run with its base, src/services/runs/run-comparison.ts), then the alert checks (they make a flaky test's health \`flaky\`). Quarantines are put on through \`quarantineTest\`. Each run's stored verdicts, fixed list and base are then read back and compared with the stream's truth (src/simulator/verdict-truth.ts). ${input.storedRuns.toLocaleString("en-US")} runs stored in ${input.seconds.toFixed(0)} s.`,
    "",
    `- **Verdict scenario family** (src/simulator/verdict-streams.ts), seeds ${seedsText(input.familySeeds)}: ${o.tests} tests, ${o.warmupRuns} default-branch runs of warm-up in which 4 flaky tests (p 0.15–0.35) fail and nothing else happens (not scored), then ${o.scenarioCommits} default-branch commits, each followed by 1–3 feature-branch runs naming their base commit. Per commit a default-branch breakage starts with probability ${r.mainBreakage} (1, 3, 8 commits or to the end); a new branch starts from the latest commit or (${r.olderBase}) 1–3 commits before, breaks 1–3 tests of its own (${r.branchBreaks}: truly new), fixes a test broken in its base when it has one (${r.branchFixes}: fixed); a run is a mass failure (60–95 % of its tests error with one message) with probability ${r.massFailureMain} on the default branch, ${r.massFailureBranch} on a feature branch; a branch run is uploaded before its base commit's run ${r.baseArrivesLate} of the time (the comparison made again when the base arrives is the one scored). Quarantined: the first flaky test when the scenarios start, and a test broken for 8 commits or more two commits after it broke.`,
    `- **Checks' corpus**: ${input.corpusText}, seeds ${seedsText(input.corpusSeeds)}; no base commit is named, so each run is compared with the default-branch run before it. Truly new there: a feature branch's own breakage, or a default-branch breakage (the simulator's breakage episodes) on the run it started on. Not new: a flaky test's failure (the flaky family's tests, the fragile pool's background failures; a slightly flaky test fails before anything can know it is flaky), a spike's or outage's failure (the environment's: a same-commit re-run passes), a breakage already in the base.`,
    "- Each run's true base is the latest default-branch run before it (for a branch: its base commit's run) that the environment did not fail wholesale, as docs/verdicts.md's base rules: in the corpus, wholesale is judged by the true causes with the numbers of the service's rule (at least 20 environment failures, at least 80 % of the run's failures or half its tests), so the service, which judges by failure signatures, can disagree on a few runs.",
    "- Unit: a failure of a run (a failed or errored test, or one that passed after a failed attempt), which the service gives one verdict. Precision of `new`: of the failures called `new`, the share truly new. Recall: of the truly new failures, the share called `new`. Expected verdict: the one the issue's rules call for from what truly happened, in the documented order where two apply (quarantined, infrastructure, new, failing_on_base, flaky).",
    "",
  ];
}

function headline(
  input: ReportInput,
  overall: VerdictScore,
): { lines: string[]; targets: { check: string; target: string; value: string; pass: boolean }[] } {
  const lines = [
    "| Streams | Runs scored | Failures | Precision of `new` (≥ 0.95) | Recall of `new` (≥ 0.95) | Fixed lists: stored of true, true of stored | Base run right |",
    "|---|---:|---:|---|---|---|---|",
  ];
  const targets = [];
  for (const [label, s] of [
    ["verdict family", input.family],
    ["checks' corpus", input.corpus],
    ["overall", overall],
  ] as const) {
    const p = precisionOfNew(s);
    const r = recallOfNew(s);
    lines.push(
      `| ${label} | ${s.runs.toLocaleString("en-US")} | ${s.failures.toLocaleString("en-US")} | ${shareText(s.newAndTrulyNew, s.newVerdicts)} ${passText(p)} | ${shareText(s.newAndTrulyNew, s.trulyNew)} ${passText(r)} | ${shareText(s.fixed.agree, s.fixed.truth)}, ${shareText(s.fixed.agree, s.fixed.stored)} | ${shareText(s.base.agree, s.base.runs)} |`,
    );
    targets.push({
      check: `verdicts (${label})`,
      target: "precision of `new` ≥ 0.95",
      value: shareText(s.newAndTrulyNew, s.newVerdicts),
      pass: p >= TARGET,
    });
    targets.push({
      check: `verdicts (${label})`,
      target: "recall of `new` ≥ 0.95",
      value: shareText(s.newAndTrulyNew, s.trulyNew),
      pass: r >= TARGET,
    });
  }
  const unmatched = overall.unmatched;
  lines.push("");
  lines.push(`Failures without a stored verdict: ${unmatched.missing}; stored verdicts of no failure: ${unmatched.extra}.`);
  return { lines, targets };
}

/** A table of rows × the verdicts, with a column for the row's share that got `right` (null: none). */
function table(
  title: string,
  first: string,
  rows: [string, string][],
  t: Map<string, Map<string, number>>,
  right: (row: string) => string | null,
): string[] {
  const lines = [
    "",
    title,
    "",
    `| ${first} | ${COLUMNS.map((c) => `\`${c}\``).join(" | ")} | Right |`,
    `|---|${COLUMNS.map(() => "---:").join("|")}|---|`,
  ];
  for (const [row, label] of rows) {
    if (!t.has(row)) continue;
    const want = right(row);
    const total = rowTotal(t, row);
    const cells = COLUMNS.map((c) => cellOf(t, row, c).toLocaleString("en-US"));
    lines.push(`| ${label} | ${cells.join(" | ")} | ${want === null ? "—" : shareText(cellOf(t, row, want), total)} |`);
  }
  return lines;
}

function sentences(family: VerdictScore): string[] {
  const t = family.byExpected;
  const share = (row: string, column: string) => shareText(cellOf(t, row, column), rowTotal(t, row));
  return [
    "",
    "The issue's six rules on the verdict family (failures whose expected verdict is the rule's, and the share that got it):",
    "",
    "| Rule | Result |",
    "|---|---|",
    `| a test that starts failing on a feature branch (or on the default branch after the base) is \`new\` | ${share("new", "new")} |`,
    `| the same failure already on main is \`failing_on_base\` | ${share("failing_on_base", "failing_on_base")} |`,
    `| a flaky test's failure is \`flaky\`, never \`new\` | ${share("flaky", "flaky")}; called \`new\`: ${cellOf(t, "flaky", "new")} |`,
    `| a run where most tests fail with one error is \`infrastructure\` | ${share("infrastructure", "infrastructure")} |`,
    `| a quarantined test's failure is \`quarantined\` | ${share("quarantined", "quarantined")} |`,
    `| a test that failed on main and passes on the branch is \`fixed\` | stored of true ${shareText(family.fixed.agree, family.fixed.truth)}; true of stored ${shareText(family.fixed.agree, family.fixed.stored)} |`,
  ];
}

function misses(input: ReportInput): string[] {
  const lines = ["", "Where the misses of `new` are:", ""];
  for (const [label, s] of [
    ["verdict family", input.family],
    ["checks' corpus", input.corpus],
  ] as const) {
    const listed = (counts: Map<string, number>) =>
      counts.size === 0
        ? "none"
        : [...counts]
            .sort((a, b) => b[1] - a[1])
            .map(([kind, n]) => `${kind} ${n.toLocaleString("en-US")}`)
            .join(", ");
    const falseText = listed(s.falseNew);
    const missedText = listed(s.missedNew);
    const afterMass =
      s.fixed.afterMassFailure > 0
        ? ` Fixed entries whose base run was a mass failure (tests its error failed, none of them broken): ${s.fixed.afterMassFailure} of ${s.fixed.truth}.`
        : "";
    lines.push(
      `- ${label}: \`new\` verdicts not truly new, by true cause: ${falseText}. Truly new failures not called \`new\`: ${missedText}.${afterMass}`,
    );
    lines.push(
      `  What-if (not a rule of the service): a failure of a test that failed on the default branch within its last 50 default-branch runs (and passed in the base) called \`flaky\` instead of \`new\` would turn ${s.recentlyFailed.falseNew} of the ${s.newVerdicts - s.newAndTrulyNew} false \`new\` verdicts and lose ${s.recentlyFailed.trueNew} of the ${s.newAndTrulyNew} right ones.`,
    );
  }
  return lines;
}

export function verdictReport(input: ReportInput) {
  const overall = mergeScores([input.family, input.corpus]);
  const { lines: head, targets } = headline(input, overall);
  const expectedRows = VERDICTS.map((v) => [v, `\`${v}\``] as [string, string]);
  const causes = (s: VerdictScore) => [...s.byCause.keys()].sort().map((c) => [c, c] as [string, string]);
  const lines = [
    ...method(input),
    ...head,
    ...sentences(input.family),
    ...table(
      "Verdict family, expected verdict (rows) against stored verdict:",
      "Expected",
      expectedRows,
      input.family.byExpected,
      (row) => row,
    ),
    ...table("Verdict family, true cause against stored verdict:", "Cause", causes(input.family), input.family.byCause, () => null),
    ...table("Checks' corpus, true cause against stored verdict:", "Cause", causes(input.corpus), input.corpus.byCause, () => null),
    ...misses(input),
  ];
  return { lines, targets };
}
