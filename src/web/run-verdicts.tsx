/**
 * A run's failures by verdict against its base (docs/verdicts.md), as the run page shows them: the
 * base in words, the counts, each verdict's first VERDICT_PAGE_SIZE failures with their reasons,
 * the tests the run fixed; and the pages that continue a verdict's list and the fixed list with
 * the API's cursors (`/projects/:id/runs/:number/failures?verdict=`, `…/fixed`). Names, reasons and
 * messages come from uploads: text only, through JSX.
 */
import type { Child, FC } from "hono/jsx";
import type { CursorCodec, Listing, Page } from "../lib/pagination";
import type { Verdict } from "../lib/vocabulary";
import type { RunComparisonObject, RunFixedItem, RunVerdictItem } from "../services/runs/run-comparison-reads";
import { withQuery } from "./access";
import { StatusBadge } from "./components";
import type { WebPaths } from "./env";

/** Failures of each verdict, and fixed tests, the run page lists; the rest is a link away (the list pages, or the API's cursor lists). */
export const VERDICT_PAGE_SIZE = 50;

/** The order a developer reads a red run in: what this change broke first, what is not its doing last. */
export const VERDICT_ORDER: readonly Verdict[] = ["new", "failing_on_base", "flaky", "quarantined", "infrastructure"];

const VERDICT_WORDS: Record<Verdict, { title: string; counted: string; hint: string }> = {
  new: { title: "New", counted: "new", hint: "Failing here but not in the base: most likely caused by this change." },
  failing_on_base: {
    title: "Failing on base",
    counted: "failing on base",
    hint: "Also failing on the default branch (in the base run, or broken there): not caused by this change.",
  },
  flaky: { title: "Flaky", counted: "flaky", hint: "Flaky tests, and tests that failed and then passed on retry in this run." },
  quarantined: { title: "Quarantined", counted: "quarantined", hint: "Quarantined when the run arrived." },
  infrastructure: {
    title: "Infrastructure",
    counted: "infrastructure",
    hint: "The run is a mass failure: most likely the environment (a database, a runner), not the code.",
  },
};

export const verdictTitle = (verdict: Verdict) => VERDICT_WORDS[verdict].title;

const shortSha = (sha: string) => sha.slice(0, 12);

/** "3 new · 2 failing on base · 1 flaky": the non-zero counts, in VERDICT_ORDER; each a link when `href` says where. */
export const VerdictCounts: FC<{ counts: Record<Verdict, number>; href?: (verdict: Verdict) => string; fixed?: number }> = ({
  counts,
  href,
  fixed,
}) => {
  const shown = VERDICT_ORDER.filter((verdict) => counts[verdict] > 0);
  if (shown.length === 0 && !fixed) return <span class="muted">no failures</span>;
  return (
    <ul class="verdict-counts">
      {shown.map((verdict) => {
        const text = `${counts[verdict]} ${VERDICT_WORDS[verdict].counted}`;
        return <li class={`verdict-chip verdict-${verdict}`}>{href ? <a href={href(verdict)}>{text}</a> : text}</li>;
      })}
      {fixed ? <li class="verdict-chip verdict-fixed">{href ? <a href="#fixed">{fixed} fixed</a> : `${fixed} fixed`}</li> : null}
    </ul>
  );
};

/** How the base was chosen, in words (docs/verdicts.md's `base_choice`). */
const BaseSentence: FC<{ comparison: RunComparisonObject; paths: WebPaths }> = ({ comparison, paths }) => {
  const { base, base_choice: choice, awaited_base_commit: awaited } = comparison;
  const awaitedText = awaited ? (
    <>
      {" "}
      The base commit the upload named (<code>{awaited}</code>) has no processed run on the default branch yet: the run is compared again
      when one is processed, if that is within 7 days of its arrival.
    </>
  ) : null;
  if (choice === "none")
    return (
      <p>
        <strong>No base run</strong>: no earlier processed run on the default branch to compare with, so a failure is new unless it is
        quarantined, flaky or part of a mass failure.{awaitedText}
      </p>
    );
  const how: Record<Exclude<typeof choice, "none">, string> = {
    base_commit: "the default branch's run of the base commit the upload named.",
    latest_default_before: awaited
      ? "the latest default-branch run before this one, in place of the named base commit."
      : "the latest default-branch run before this one (the upload named no base commit).",
    previous_default: "the previous run on the default branch.",
  };
  if (!base) return <p>The base run ({how[choice]}) has been deleted since the comparison was made.</p>;
  return (
    <p>
      Compared with <a href={paths.to(`/projects/${comparison.project_id}/runs/${base.number}`)}>run #{base.number}</a>
      {base.branch ? <> on {base.branch}</> : null}
      {base.commit_sha ? (
        <>
          {" "}
          at <code>{shortSha(base.commit_sha)}</code>
        </>
      ) : null}
      : {how[choice]}
      {awaitedText}
    </p>
  );
};

/** One failure and its verdict's reason, next to the link to the test's page (and to its trace, when the page lists the case by cause). */
export const VerdictItem: FC<{ item: RunVerdictItem; testPath: string; traceHref: string | null; showVerdict?: boolean }> = ({
  item,
  testPath,
  traceHref,
  showVerdict,
}) => (
  <li>
    <a href={testPath}>{item.name}</a>
    {item.classname ? <span class="muted"> {item.classname}</span> : null} <StatusBadge status={item.status} />
    {showVerdict ? <span class={`badge verdict-${item.verdict}`}>{verdictTitle(item.verdict)}</span> : null}
    <p class="reason">
      <span class="visually-hidden">Why: </span>
      {item.reason}
      {traceHref ? (
        <>
          {" · "}
          <a href={traceHref}>trace</a>
        </>
      ) : null}
    </p>
    {item.failure_message ? <p class="failure-message">{clip(item.failure_message)}</p> : null}
  </li>
);

/** A failure message's first lines on the verdict lists (the whole message and trace are under "Failures by cause"). */
function clip(message: string): string {
  return message.length > 300 ? `${message.slice(0, 300)}…` : message;
}

type VerdictSection = { verdict: Verdict; page: Page<RunVerdictItem>; more: string | null };

export type RunComparisonView = {
  comparison: RunComparisonObject;
  sections: VerdictSection[];
  fixed: Page<RunFixedItem>;
  fixedMore: string | null;
};

/**
 * The run page's "Failures by verdict": the base, the counts, each verdict's first failures with
 * their reasons, the fixed tests. `state` when there is no comparison to show: why not.
 */
export const FailuresByVerdict: FC<{
  view: RunComparisonView | null;
  state: "pending" | "failed" | "before_comparisons";
  paths: WebPaths;
  testPath: (testId: string) => string;
  traceHref: (testCaseId: number) => string | null;
}> = ({ view, state, paths, testPath, traceHref }) => (
  <section aria-labelledby="verdicts">
    <h2 id="verdicts">Failures by verdict</h2>
    {view === null ? (
      <p class={state === "before_comparisons" ? "muted" : undefined}>{NO_COMPARISON[state]}</p>
    ) : (
      <>
        <BaseSentence comparison={view.comparison} paths={paths} />
        {view.comparison.infrastructure_reason ? (
          <p class="notice-info">
            <strong>Infrastructure</strong>: {view.comparison.infrastructure_reason}.
          </p>
        ) : null}
        <VerdictCounts
          counts={view.comparison.verdict_counts}
          href={(verdict) => `#verdict-${verdict}`}
          fixed={view.comparison.fixed_count}
        />
        {view.sections.length > 0 ? (
          <p class="muted small">
            Traces, and the failures grouped by their message, are under <a href="#failures">Failures by cause</a>.
          </p>
        ) : null}
        {view.sections.map(({ verdict, page, more }) => (
          <VerdictGroup
            id={`verdict-${verdict}`}
            title={VERDICT_WORDS[verdict].title}
            count={view.comparison.verdict_counts[verdict]}
            hint={VERDICT_WORDS[verdict].hint}
            shown={page.items.length}
            more={more}
          >
            {page.items.map((item) => (
              <VerdictItem item={item} testPath={testPath(item.test_id)} traceHref={traceHref(item.test_case_id)} />
            ))}
          </VerdictGroup>
        ))}
        {view.comparison.fixed_count > 0 ? (
          <VerdictGroup
            id="fixed"
            title="Fixed"
            count={view.comparison.fixed_count}
            hint="Failed in the base, pass in this run."
            shown={view.fixed.items.length}
            more={view.fixedMore}
          >
            {view.fixed.items.map((item) => (
              <FixedItem item={item} testPath={testPath(item.test_id)} />
            ))}
          </VerdictGroup>
        ) : null}
      </>
    )}
  </section>
);

const NO_COMPARISON = {
  pending: "No comparison yet: the run is still being processed. Its failures are compared with a base run when it is.",
  failed: "No comparison: the run's report could not be processed, so there is nothing to compare with a base.",
  before_comparisons: "This run was processed before runs were compared with a base: its failures are shown by cause only.",
} as const;

const VerdictGroup: FC<{
  id: string;
  title: string;
  count: number;
  hint: string;
  shown: number;
  more: string | null;
  children?: Child;
}> = ({ id, title, count, hint, shown, more, children }) => (
  <section class={`verdict-group ${id}`} id={id} aria-labelledby={`${id}-heading`}>
    <h3 id={`${id}-heading`}>
      {title} <span class="count">({count})</span>
    </h3>
    <p class="muted small">{hint}</p>
    <ul class="verdict-list">{children}</ul>
    {more ? (
      <p class="more">
        The first {shown} of {count} are shown. <a href={more}>The next ones</a>
      </p>
    ) : null}
  </section>
);

const FixedItem: FC<{ item: RunFixedItem; testPath: string }> = ({ item, testPath }) => (
  <li>
    <a href={testPath}>{item.name}</a>
    {item.classname ? <span class="muted"> {item.classname}</span> : null} <StatusBadge status="passed" />
  </li>
);

/** Where a verdict's list (or the fixed list) continues after a page: its list page with the cursor the API would give (the same codec and listing). */
export function continuation(
  codec: CursorCodec,
  listing: Listing,
  page: Page<unknown>,
  path: string,
  query: Record<string, string | null>,
) {
  return page.next ? withQuery(path, { ...query, cursor: codec.encode(listing, page.next) }) : null;
}
