/**
 * The Markdown summary appended to GITHUB_STEP_SUMMARY (GitHub Actions shows it on the run's
 * page): the counts, the failures (not quarantined first, then quarantined, with --quarantine),
 * the runs' pages, each failure's test page when its run was processed within --wait, and what
 * went wrong with the upload or the quarantine list. Everything from reports or the service is
 * escaped: a test name cannot inject Markdown or HTML.
 */
import { testIdentityKey } from "../lib/test-identity";
import type { QuarantineLookup, Verdict } from "./quarantine";
import { type FailedTest, type TestResults, testLabel } from "./results";
import type { RunInfo } from "./upload";

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
function link(text: string, url: string | null): string {
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

export function buildStepSummary(input: SummaryInput): string {
  const { results, runs, problems, quarantine } = input;
  const { counts } = results;
  const failing = counts.failed + counts.errored;
  const pages = new Map<string, string>();
  for (const run of runs) for (const test of run.failedTests ?? []) pages.set(testIdentityKey(test), test.url);

  let headline: string;
  if (quarantine) {
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
    lines.push(`- Test run ${link(`#${run.number ?? "?"}`, run.url)} (${plainText(run.status)})`);
  }
  for (const problem of problems) lines.push(`- ⚠️ ${plainText(problem, 500)}`);
  if (quarantine) {
    const { lookup } = quarantine;
    lines.push(lookup.problem ? `- ⚠️ ${plainText(lookup.problem, 500)}` : `- Quarantine: ${plainText(lookup.note)}`);
  }

  if (quarantine) {
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
