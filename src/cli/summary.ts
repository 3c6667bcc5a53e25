/**
 * The Markdown summary appended to GITHUB_STEP_SUMMARY (GitHub Actions shows it on the run's
 * page): the counts, the runs' pages, what went wrong with the upload or the quarantine list, and
 * the failures: grouped by verdict against the base (new first, each with its reason and test
 * page) when every run was processed within --wait and its verdicts read; otherwise as the
 * reports hold them (not quarantined first, then quarantined, with --quarantine), each with its
 * test page when its run was processed within --wait. Everything from reports or the service is
 * escaped: a test name cannot inject Markdown or HTML.
 */
import { testIdentityKey } from "../lib/test-identity";
import type { Verdict as VerdictName } from "../lib/vocabulary";
import type { QuarantineLookup, Verdict } from "./quarantine";
import { type FailedTest, type TestResults, testLabel } from "./results";
import type { RunInfo } from "./upload";
import {
  type GateDecision,
  type RunComparison,
  type RunVerdicts,
  VERDICT_ORDER,
  VERDICT_TITLES,
  type VerdictFailure,
  describeBase,
  describeGate,
  totalCounts,
} from "./verdicts";

/** Failures listed per section; the rest are counted. GitHub takes at most 1 MiB per step's summary. */
const MAX_LISTED = 100;
const MAX_TEXT = 200;

export type SummaryInput = {
  results: TestResults;
  runs: RunInfo[];
  /** Upload problems (failed uploads, rejected token, --wait timing out), as printed. */
  problems: string[];
  /** With --quarantine: the verdict and where the list came from. */
  quarantine: { verdict: Verdict; lookup: QuarantineLookup } | null;
  /** With --fail-on new: the gate's decision. */
  gate?: GateDecision | null;
};

/** `text` as an inline code span, whatever backticks it holds, on one line. */
export function codeSpan(text: string): string {
  const line = text.replace(/[\r\n]+/g, " ");
  const longest = Math.max(0, ...[...line.matchAll(/`+/g)].map((m) => m[0].length));
  const fence = "`".repeat(longest + 1);
  const pad = longest > 0 || line.startsWith(" ") || line.endsWith(" ") ? " " : "";
  return `${fence}${pad}${line}${pad}${fence}`;
}

/** Free text (a message, a reason) on one line, cut, with Markdown and HTML characters escaped. */
export function plainText(text: string, max = MAX_TEXT): string {
  let line = text.replace(/\s+/g, " ").trim();
  if (line.length > max) line = `${line.slice(0, max - 1)}…`;
  // Mid-line (it never starts one here), only these can make Markdown or HTML.
  return line.replace(/[\\`*_{}[\]()<>|~&]/g, (c) => `\\${c}`);
}

/** A link to an http(s) URL (anything else is shown as text). */
export function link(text: string, url: string | null): string {
  if (!url) return text;
  try {
    const parsed = new URL(url);
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:") return text;
    return `[${text}](${parsed.href.replaceAll("(", "%28").replaceAll(")", "%29")})`;
  } catch {
    return text;
  }
}

function plural(n: number, one: string, many = `${one}s`): string {
  return `${n.toLocaleString("en-US")} ${n === 1 ? one : many}`;
}

function failureLine(failure: FailedTest, pages: Map<string, string>, extra: string | null): string {
  const page = pages.get(testIdentityKey(failure));
  const parts = [`${codeSpan(testLabel(failure))} (${failure.status})`];
  if (extra) parts.push(extra);
  else if (failure.message) parts.push(plainText(failure.message));
  if (page) parts.push(link("test page", page));
  return `- ${parts.join(" — ")}`;
}

function section(title: string, lines: string[]): string[] {
  if (lines.length === 0) return [];
  const shown = lines.slice(0, MAX_LISTED);
  const rest = lines.length - shown.length;
  return [
    "",
    `#### ${title} (${lines.length.toLocaleString("en-US")})`,
    "",
    ...shown,
    ...(rest > 0 ? [`- … and ${rest.toLocaleString("en-US")} more`] : []),
  ];
}

/** Test names are cut to this many characters in verdict lines (their pages have them whole). */
const MAX_LABEL = 300;

/** One failure with its verdict's reason and its test's page. */
function verdictFailureLine(failure: VerdictFailure): string {
  const label = testLabel(failure);
  const parts = [
    `${codeSpan(label.length > MAX_LABEL ? `${label.slice(0, MAX_LABEL - 1)}…` : label)} (${plainText(failure.status)})`,
    plainText(failure.reason, 300),
  ];
  if (failure.url) parts.push(link("test page", failure.url));
  return `- ${parts.join(" — ")}`;
}

/** The runs' verdicts and fixed tests counted, as a one-row table. */
export function verdictCountsTable(runs: { verdicts: RunVerdicts | null }[]): string[] {
  const { counts, fixed } = totalCounts(runs);
  return [
    `| ${VERDICT_ORDER.map((v) => VERDICT_TITLES[v]).join(" | ")} | Fixed |`,
    `| ${VERDICT_ORDER.map(() => "---:").join(" | ")} | ---: |`,
    `| ${[...VERDICT_ORDER.map((v) => counts[v]), fixed].map((n) => n.toLocaleString("en-US")).join(" | ")} |`,
  ];
}

/** The headline the verdicts give: a mass failure, new failures, or none. */
export function verdictHeadline(runs: { verdicts: RunVerdicts | null }[]): string {
  const { counts } = totalCounts(runs);
  const known = counts.failing_on_base + counts.flaky + counts.quarantined;
  if (counts.infrastructure > 0) return `❌ mass failure (${plural(counts.infrastructure, "failure")}, infrastructure): re-run`;
  if (counts.new > 0) return `❌ ${plural(counts.new, "new failure")}`;
  if (known > 0) return `✅ no new failures (${known.toLocaleString("en-US")} known)`;
  return "✅ no failures";
}

/** "compared with run [#11](…) (main, 28335f0), the pull request's base commit", escaped. */
export function comparedWith(comparison: RunComparison): string {
  const text = describeBase(comparison);
  const { base } = comparison;
  if (base === null) return plainText(text, 500);
  const rest = text.slice(`run #${base.number}`.length);
  return `run ${link(`#${base.number}`, base.url)}${rest.startsWith(" ") ? " " : ""}${plainText(rest, 500)}`;
}

/** Each verdict's failures (as many as were read), the rest counted. */
export function verdictSections(runs: RunInfo[], max = MAX_LISTED): { verdict: VerdictName; title: string; lines: string[] }[] {
  return VERDICT_ORDER.flatMap((verdict) => {
    const lines: string[] = [];
    let count = 0;
    for (const run of runs) {
      if (run.verdicts === null) continue;
      count += run.verdicts.comparison.counts[verdict];
      lines.push(...run.verdicts.failures[verdict].map(verdictFailureLine));
    }
    if (count === 0) return [];
    const shown = lines.slice(0, max);
    const rest = count - shown.length;
    if (rest > 0) shown.push(`- … and ${rest.toLocaleString("en-US")} more`);
    return [{ verdict, title: `${VERDICT_TITLES[verdict]} (${count.toLocaleString("en-US")})`, lines: shown }];
  });
}

export function buildStepSummary(input: SummaryInput): string {
  const { results, runs, problems, quarantine } = input;
  const { counts } = results;
  const failing = counts.failed + counts.errored;
  const pages = new Map<string, string>();
  for (const run of runs) for (const test of run.failedTests ?? []) pages.set(testIdentityKey(test), test.url);
  // Every run's verdicts read: they replace the reports' failure lists.
  const byVerdict = runs.length > 0 && runs.every((run) => run.verdicts !== null);
  const gateDecided = input.gate !== undefined && input.gate !== null && input.gate.kind !== "unknown";

  let headline: string;
  if (byVerdict && (gateDecided || !quarantine)) {
    headline = verdictHeadline(runs);
  } else if (quarantine) {
    const open = quarantine.verdict.notQuarantined.length;
    if (open > 0) headline = `❌ ${plural(open, "failed test")} not quarantined`;
    else if (results.unreadable.length > 0) headline = `❌ ${plural(results.unreadable.length, "report")} could not be read`;
    else if (failing > 0) headline = `✅ every failed test is quarantined (${failing.toLocaleString("en-US")})`;
    else headline = "✅ no failed tests";
  } else {
    headline =
      failing > 0
        ? `❌ ${plural(failing, "failed test")}`
        : results.unreadable.length > 0
          ? "⚠️ some reports could not be read"
          : "✅ no failed tests";
  }

  const lines = [
    `### CI test analytics: ${headline}`,
    "",
    "| Tests | Passed | Failed | Errored | Skipped |",
    "| ---: | ---: | ---: | ---: | ---: |",
    `| ${[counts.tests, counts.passed, counts.failed, counts.errored, counts.skipped].map((n) => n.toLocaleString("en-US")).join(" | ")} |`,
    "",
  ];
  for (const run of runs) {
    const compared = run.verdicts ? `, compared with ${comparedWith(run.verdicts.comparison)}` : "";
    lines.push(`- Test run ${link(`#${run.number ?? "?"}`, run.url)} (${plainText(run.status)})${compared}`);
  }
  for (const problem of problems) lines.push(`- ⚠️ ${plainText(problem, 500)}`);
  if (quarantine) {
    const { lookup } = quarantine;
    lines.push(lookup.problem ? `- ⚠️ ${plainText(lookup.problem, 500)}` : `- Quarantine: ${plainText(lookup.note)}`);
  }
  if (input.gate) lines.push(`- Merge gate (\`--fail-on new\`): ${plainText(describeGate(input.gate), 500)}`);

  if (byVerdict) {
    lines.push("", ...verdictCountsTable(runs));
    for (const { title, lines: items } of verdictSections(runs)) lines.push("", `#### ${title}`, "", ...items);
  } else if (quarantine) {
    lines.push(
      ...section(
        "Failures not quarantined",
        quarantine.verdict.notQuarantined.map((f) => failureLine(f, pages, null)),
      ),
    );
    lines.push(
      ...section(
        "Quarantined failures",
        quarantine.verdict.quarantined.map(({ failure, entry }) =>
          failureLine(failure, pages, `quarantined: ${plainText(entry.reason)}, until ${plainText(entry.expires_at.slice(0, 10))}`),
        ),
      ),
    );
  } else {
    lines.push(
      ...section(
        "Failures",
        results.failures.map((f) => failureLine(f, pages, null)),
      ),
    );
  }
  lines.push(
    ...section(
      "Reports that could not be read",
      results.unreadable.map((u) => `- ${codeSpan(u.report)}: ${plainText(u.reason)}`),
    ),
  );
  return `${lines.join("\n")}\n\n`;
}
