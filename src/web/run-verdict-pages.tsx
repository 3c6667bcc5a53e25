/**
 * Where the run page's verdict lists continue (docs/verdicts.md): `/projects/:id/runs/:number/failures`
 * (every failure with its verdict, or one verdict's with `?verdict=`) and `…/fixed`, a keyset page
 * at a time with the API's own list definitions and signed cursors (`GET …/comparison/failures`
 * and `…/comparison/fixed`): a cursor of the page works on the API and back. The run is found
 * once with the person's membership (runMemberAccess); a run with no comparison says why.
 */
import type { Hono } from "hono";
import type { Child, FC } from "hono/jsx";
import { PageQuerySchema, RunVerdictsQuerySchema } from "../contract/schemas";
import { readListRequest } from "../lib/lists";
import type { CursorCodec } from "../lib/pagination";
import {
  type RunFixedFilters,
  type RunVerdictFilters,
  fixedPageOf,
  runFixedList,
  runVerdictList,
  verdictPageOf,
} from "../services/runs/run-comparison-reads";
import type { RunRow } from "../services/tenancy/memberships";
import { runMemberAccess, withQuery } from "./access";
import { PageLinks, StatusBadge } from "./components";
import type { WebConfig, WebEnv, WebPaths } from "./env";
import { Layout } from "./layout";
import { pageNotFound } from "./not-found";
import { parseQuery } from "./page-input";
import { VERDICT_PAGE_SIZE, VerdictItem, continuation, verdictTitle } from "./run-verdicts";
import { signedIn } from "./session";

type Found = NonNullable<Awaited<ReturnType<typeof runMemberAccess>>>;

/** The page's size: the query's `limit` as the API reads it, else the run page's VERDICT_PAGE_SIZE. */
const limitOf = (query: { limit?: string }) => ({ ...query, limit: query.limit ?? String(VERDICT_PAGE_SIZE) });

export function registerRunVerdictPages(web: Hono<WebEnv>, config: WebConfig, paths: WebPaths, codec: CursorCodec): void {
  web.get("/projects/:id/runs/:number/failures", signedIn(config, paths), async (c) => {
    const found = await runMemberAccess(c, config, paths);
    if (!found) return pageNotFound(c, c.var.person, paths);
    const query = parseQuery(RunVerdictsQuerySchema, c, ["verdict", "cursor", "limit"]);
    const filters: RunVerdictFilters = { project_id: found.project.id, run: String(found.run.number), verdict: query.verdict ?? null };
    const request = readListRequest(codec, runVerdictList, { organizationId: found.access.scope.organizationId, filters }, limitOf(query));
    const title = filters.verdict === null ? "Failures by verdict" : `${verdictTitle(filters.verdict)} failures`;
    if (!compared(found.run)) return c.html(<ListFrame found={found} paths={paths} title={title} empty={NOT_COMPARED} />);
    const page = await verdictPageOf(found.access.scope, found.run, request);
    const path = runPath(paths, found.run, "failures");
    const testPath = (testId: string) => paths.to(`/projects/${found.project.id}/tests/${testId}`);
    return c.html(
      <ListFrame found={found} paths={paths} title={title} empty={page.items.length === 0 ? "No failures match." : null}>
        <ul class="verdict-list">
          {page.items.map((item) => (
            <VerdictItem item={item} testPath={testPath(item.test_id)} traceHref={null} showVerdict={filters.verdict === null} />
          ))}
        </ul>
        <PageLinks
          first={request.after ? withQuery(path, { verdict: filters.verdict }) : null}
          next={continuation(codec, runVerdictList.listing(request), page, path, { verdict: filters.verdict })}
          label="Failures"
        />
      </ListFrame>,
    );
  });

  web.get("/projects/:id/runs/:number/fixed", signedIn(config, paths), async (c) => {
    const found = await runMemberAccess(c, config, paths);
    if (!found) return pageNotFound(c, c.var.person, paths);
    const query = parseQuery(PageQuerySchema, c, ["cursor", "limit"]);
    const filters: RunFixedFilters = { project_id: found.project.id, run: String(found.run.number) };
    const request = readListRequest(codec, runFixedList, { organizationId: found.access.scope.organizationId, filters }, limitOf(query));
    const title = "Fixed tests";
    if (!compared(found.run)) return c.html(<ListFrame found={found} paths={paths} title={title} empty={NOT_COMPARED} />);
    const page = await fixedPageOf(found.access.scope, found.run, request);
    const path = runPath(paths, found.run, "fixed");
    return c.html(
      <ListFrame found={found} paths={paths} title={title} empty={page.items.length === 0 ? "No test was fixed by this run." : null}>
        <p class="muted small">Failed in the base, pass in this run.</p>
        <ul class="verdict-list">
          {page.items.map((item) => (
            <li>
              <a href={paths.to(`/projects/${found.project.id}/tests/${item.test_id}`)}>{item.name}</a>
              {item.classname ? <span class="muted"> {item.classname}</span> : null} <StatusBadge status="passed" />
            </li>
          ))}
        </ul>
        <PageLinks
          first={request.after ? path : null}
          next={continuation(codec, runFixedList.listing(request), page, path, {})}
          label="Fixed tests"
        />
      </ListFrame>,
    );
  });
}

const NOT_COMPARED =
  "No comparison yet: this run has not been compared with a base (it is still being processed, its processing failed, or it was processed before comparisons existed).";

/** Whether the run has a comparison to list (its `verdict_counts` are set with it). */
const compared = (run: RunRow) => run.status === "processed" && run.verdictCounts !== null;

const runPath = (paths: WebPaths, run: RunRow, list: string) => paths.to(`/projects/${run.projectId}/runs/${run.number}/${list}`);

/** The list pages' frame: crumbs back to the run, the title, and the list or why there is none. */
const ListFrame: FC<{ found: Found; paths: WebPaths; title: string; empty: string | null; children?: Child }> = ({
  found,
  paths,
  title,
  empty,
  children,
}) => {
  const { project, run, access } = found;
  return (
    <Layout title={`${title} · Run #${run.number} · ${project.name}`} page={access.page} section="projects">
      <p class="crumbs">
        <a href={paths.to(`/projects/${project.id}`)}>{project.name}</a> › <a href={paths.to(`/projects/${project.id}/runs`)}>Runs</a> ›{" "}
        <a href={paths.to(`/projects/${project.id}/runs/${run.number}`)}>Run #{run.number}</a>
      </p>
      <h1>
        {title} of run #{run.number}
      </h1>
      {empty !== null ? <p>{empty}</p> : children}
    </Layout>
  );
};
