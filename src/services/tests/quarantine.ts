/**
 * Quarantine (docs/quarantine.md): a test whose failures CI should not act on for a while, with a
 * reason, an end, and optionally an owner and an issue. Stored on the test's row, replaced whole by
 * each quarantine, in force while `quarantine_expires_at > now`: an expired quarantine ends by
 * itself, at read time, like a snooze.
 *
 * Every change of a project's quarantines counts in `projects.quarantine_version`, which (with the
 * latest expiry that has passed) is the ETag of the list CI reads: a list that has not changed
 * costs CI one small indexed query.
 */
import { and, eq, gt, inArray, isNotNull, isNull, lte, max, notInArray, or, sql } from "drizzle-orm";
import { apiKeys, projects, testIdentitySql, tests } from "../../db/schema";
import { rowsOf } from "../../db/rows";
import type { Database } from "../../db/types";
import type { Transaction } from "../../db/transaction-retry";
import type { RunQueue } from "../../ingest/run-queue";
import type { Clock } from "../../lib/clock";
import { ApiError, validationFailed } from "../../lib/errors";
import type { Logger } from "../../lib/logger";
import { QUARANTINE_DURATIONS, type QuarantineDuration } from "../../lib/vocabulary";
import type { OrgScope } from "../shared/context";
import { presentQuarantinedTestForCi, presentTest } from "../../contract/presenters";
import { type TestEvent, queueDeliveries, recordTestEvents } from "./test-events";
import { type TestObject, findTestRow, listTestSiblings, windowOf } from "./tests";
import { type TestHealthChange, lockProjectTests } from "./tests-state";

/** The furthest ahead a quarantine may end: the longest duration. */
const MAX_QUARANTINE_MS = QUARANTINE_DURATIONS["90d"];
/** Quarantines in force per project at most: all of them fit in the CI's list, which is not paginated. */
export const MAX_QUARANTINED_TESTS = 10_000;
/** The longest `auto_quarantine_days`: an auto-quarantine ends within the same 90 days as any other. */
export const MAX_AUTO_QUARANTINE_DAYS = MAX_QUARANTINE_MS / 86_400_000;
/** A quarantine's reason at most, as the API accepts it. */
const MAX_REASON_LENGTH = 1000;

/** What a quarantine made through the API needs besides the organization's scope: where its webhook deliveries go. */
export type QuarantineDeps = OrgScope & { queue: RunQueue; logger: Logger };

/**
 * Who quarantines (docs/quarantine.md, "Who quarantined it"): a signed-in person on the test's
 * page, or an API key through the REST API or the MCP server. Recorded with the quarantine as
 * named at that moment, so a removed member or a regenerated key still reads as who it was.
 */
export type QuarantineActor = { via: "page"; userId: string; name: string; email: string } | { via: "api" | "mcp"; apiKeyId: string };

/** The actor's columns; an API key's name is read in the organization (a key of another one names nobody). */
async function actorColumns(tx: Transaction, organizationId: string, actor: QuarantineActor) {
  if (actor.via === "page") {
    return {
      quarantineVia: actor.via,
      quarantineActorId: actor.userId,
      quarantineActorName: actor.name,
      quarantineActorEmail: actor.email,
    };
  }
  const [key] = await tx
    .select({ name: apiKeys.name })
    .from(apiKeys)
    .where(and(eq(apiKeys.id, actor.apiKeyId), eq(apiKeys.organizationId, organizationId)));
  return {
    quarantineVia: actor.via,
    quarantineActorId: actor.apiKeyId,
    quarantineActorName: key?.name ?? null,
    quarantineActorEmail: null,
  };
}

/** A quarantine as the route validated it (null: absent); exactly one of `expiresAt` and `duration`. */
export type QuarantineInput = {
  reason: string;
  expiresAt: Date | null;
  duration: QuarantineDuration | null;
  owner: string | null;
  issueUrl: string | null;
  /** The quarantine names every variant of the test (docs/quarantine.md, "Variants"). */
  allVariants: boolean;
};

/** A quarantine's body as the API, the MCP tool and the page validate it (QuarantineBodySchema), as the service takes it. */
export function quarantineInputOf(body: {
  reason: string;
  expires_at?: string | null;
  duration?: QuarantineDuration | null;
  owner?: string | null;
  issue_url?: string | null;
  all_variants?: boolean | null;
}): QuarantineInput {
  return {
    reason: body.reason,
    expiresAt: body.expires_at ? new Date(body.expires_at) : null,
    duration: body.duration ?? null,
    owner: body.owner ?? null,
    issueUrl: body.issue_url ?? null,
    allVariants: body.all_variants === true,
  };
}

/** The quarantine's end: `expires_at` must be in the future and at most 90 days ahead (rules that need the clock). */
function endOf(input: QuarantineInput, now: Date): Date {
  if (input.duration !== null) return new Date(now.getTime() + QUARANTINE_DURATIONS[input.duration]);
  const expiresAt = input.expiresAt!;
  if (expiresAt.getTime() <= now.getTime()) throw validationFailed([{ field: "expires_at", message: "must be in the future" }]);
  if (expiresAt.getTime() > now.getTime() + MAX_QUARANTINE_MS)
    throw validationFailed([{ field: "expires_at", message: "must be at most 90 days ahead" }]);
  return expiresAt;
}

/**
 * Quarantines a test, replacing a quarantine in force whole (nothing of the old one is kept); with
 * `allVariants`, the same quarantine of each of its siblings in the project's other variants, and
 * of the variants that appear later (docs/quarantine.md, "Variants"). Quarantines of a project are
 * written one at a time (the lock of the project's tests' rows, which run processing and the alert
 * checks take too, so the three cannot deadlock): the version counter and the 10,000 cap are exact.
 */
export async function quarantineTest(
  scope: QuarantineDeps,
  testId: string,
  input: QuarantineInput,
  actor: QuarantineActor,
): Promise<TestObject> {
  const now = scope.clock.now();
  const expiresAt = endOf(input, now);
  const { test, project } = await findTestRow(scope, testId);
  const updated = await scope.db.transaction(async (tx) => {
    await lockProjectTests(tx, test.projectId);
    const targets = [test.id, ...(input.allVariants ? (await listTestSiblings(tx, test)).map((sibling) => sibling.id) : [])];
    const [{ others } = { others: 0 }] = await tx
      .select({ others: sql<number>`count(*)::int` })
      .from(tests)
      .where(and(eq(tests.projectId, test.projectId), gt(tests.quarantineExpiresAt, now), notInArray(tests.id, targets)));
    if (others + targets.length > MAX_QUARANTINED_TESTS) {
      throw validationFailed([
        {
          field: "id",
          message: `the project already has ${others} quarantined tests and the CI list holds at most ${MAX_QUARANTINED_TESTS}: unquarantine some first`,
        },
      ]);
    }
    await tx
      .update(projects)
      .set({ quarantineVersion: sql`${projects.quarantineVersion} + 1` })
      .where(eq(projects.id, test.projectId));
    const by = await actorColumns(tx, scope.organizationId, actor);
    const rows = await tx
      .update(tests)
      .set({
        quarantineReason: input.reason,
        quarantineOwner: input.owner,
        quarantineIssueUrl: input.issueUrl,
        quarantineCreatedAt: now,
        quarantineExpiresAt: expiresAt,
        quarantineSource: "manual",
        quarantineAllVariants: input.allVariants,
        ...by,
      })
      .where(inArray(tests.id, targets))
      .returning();
    const deliveries = await recordTestEvents(
      tx,
      scope.webAppUrl,
      { projectId: test.projectId, testRunId: null, occurredAt: now },
      targets.map((id) => ({ type: "test.quarantined" as const, testId: id })),
    );
    return { row: rows.find((row) => row.id === test.id)!, deliveries };
  });
  await queueDeliveries(scope, updated.deliveries);
  return presentTest(updated.row, windowOf(project), scope.webAppUrl, now);
}

const endedQuarantine = {
  quarantineReason: null,
  quarantineOwner: null,
  quarantineIssueUrl: null,
  quarantineCreatedAt: null,
  quarantineExpiresAt: null,
  quarantineSource: null,
  quarantineAllVariants: false,
  quarantineVia: null,
  quarantineActorId: null,
  quarantineActorName: null,
  quarantineActorEmail: null,
};

/**
 * Ends a quarantine in force, and with it, when it named every variant, the same quarantine of the
 * test's siblings; a test not quarantined (never, or expired) is returned unchanged, and such a
 * no-op sends no `test.unquarantined` webhook.
 */
export async function unquarantineTest(scope: QuarantineDeps, testId: string): Promise<TestObject> {
  const now = scope.clock.now();
  const { test, project } = await findTestRow(scope, testId);
  const updated = await scope.db.transaction(async (tx) => {
    await lockProjectTests(tx, test.projectId);
    const [row] = await tx
      .update(tests)
      .set(endedQuarantine)
      .where(and(eq(tests.id, test.id), gt(tests.quarantineExpiresAt, now)))
      .returning();
    if (!row) return null;
    const siblings = test.quarantineAllVariants ? (await listTestSiblings(tx, test)).map((sibling) => sibling.id) : [];
    const ended =
      siblings.length === 0
        ? []
        : await tx
            .update(tests)
            .set(endedQuarantine)
            .where(and(inArray(tests.id, siblings), eq(tests.quarantineAllVariants, true), gt(tests.quarantineExpiresAt, now)))
            .returning({ id: tests.id });
    await tx
      .update(projects)
      .set({ quarantineVersion: sql`${projects.quarantineVersion} + 1` })
      .where(eq(projects.id, test.projectId));
    const deliveries = await recordTestEvents(
      tx,
      scope.webAppUrl,
      { projectId: test.projectId, testRunId: null, occurredAt: now },
      [test.id, ...ended.map((sibling) => sibling.id)].map((id) => ({ type: "test.unquarantined" as const, testId: id })),
    );
    return { row, deliveries };
  });
  if (updated) await queueDeliveries(scope, updated.deliveries);
  return presentTest(updated?.row ?? test, windowOf(project), scope.webAppUrl, now);
}

/** What following a run's health changes needs: the clock of the quarantines, the log of the cap, the base of the payloads' URLs. */
export type HealthFollowDeps = { clock: Clock; logger: Logger; webAppUrl: string };

/**
 * Follows the health changes a run made (its own health rules, or the flakiness check's flags),
 * in the transaction that made them, under the project's tests lock: auto-quarantines the tests
 * that turned flaky when the project asks for it, and plans the `test.health_changed` and
 * `test.quarantined` webhooks (queued after the commit, queueRunTestEvents).
 */
export async function followHealthChanges(
  tx: Database,
  deps: HealthFollowDeps,
  run: { id: number; number: number; projectId: string; processedAt: Date },
  changes: TestHealthChange[],
): Promise<void> {
  if (changes.length === 0) return;
  const quarantined = await autoQuarantine(tx, deps, run, changes);
  const events: TestEvent[] = [
    ...changes.map((change) => ({ type: "test.health_changed" as const, testId: change.testId })),
    ...quarantined.map((testId) => ({ type: "test.quarantined" as const, testId })),
  ];
  await recordTestEvents(tx, deps.webAppUrl, { projectId: run.projectId, testRunId: run.id, occurredAt: deps.clock.now() }, events);
}

/**
 * Auto-quarantine (docs/quarantine.md): with the project's `auto_quarantine_days` set, a test
 * that turned flaky from healthy is quarantined (source `auto`) for that many days from the run's
 * processing, with a reason naming the run and the evidence. Not a test that was broken (its
 * failures were consistent until then: quarantining it would hide a breakage), nor one whose
 * quarantine is in force (a person's, or an earlier auto-quarantine, is kept). Counts in the
 * quarantine version like any quarantine; beyond the 10,000 in force, tests are left
 * unquarantined and the log says so. Returns the tests quarantined.
 */
async function autoQuarantine(
  tx: Database,
  deps: Pick<HealthFollowDeps, "clock" | "logger">,
  run: { id: number; number: number; projectId: string; processedAt: Date },
  changes: TestHealthChange[],
): Promise<string[]> {
  const turnedFlaky = new Map(
    changes.filter((change) => change.to === "flaky" && change.from === "healthy").map((change) => [change.testId, change.reason]),
  );
  if (turnedFlaky.size === 0) return [];
  const [project] = await tx.select({ days: projects.autoQuarantineDays }).from(projects).where(eq(projects.id, run.projectId)).limit(1);
  if (!project || project.days === null) return [];
  const now = deps.clock.now();
  const expiresAt = new Date(run.processedAt.getTime() + project.days * 86_400_000);
  const candidates = await tx
    .select({ id: tests.id })
    .from(tests)
    .where(
      and(
        eq(tests.projectId, run.projectId),
        inArray(tests.id, [...turnedFlaky.keys()]),
        eq(tests.health, "flaky"),
        or(isNull(tests.quarantineExpiresAt), lte(tests.quarantineExpiresAt, now)),
      ),
    )
    .orderBy(tests.id);
  if (candidates.length === 0) return [];
  const [{ inForce } = { inForce: 0 }] = await tx
    .select({ inForce: sql<number>`count(*)::int` })
    .from(tests)
    .where(and(eq(tests.projectId, run.projectId), gt(tests.quarantineExpiresAt, now)));
  const room = Math.max(0, MAX_QUARANTINED_TESTS - inForce);
  const chosen = candidates.slice(0, room).map((row) => row.id);
  if (chosen.length < candidates.length) {
    deps.logger.error("auto-quarantine skipped: the project has the most quarantines in force the CI list holds", {
      projectId: run.projectId,
      testRunId: run.id,
      limit: MAX_QUARANTINED_TESTS,
      skipped: candidates.length - chosen.length,
    });
  }
  if (chosen.length === 0) return [];
  const rows = chosen.map((id) => ({
    id,
    r: `Auto-quarantined: turned flaky in run #${run.number} (${turnedFlaky.get(id)!})`.slice(0, MAX_REASON_LENGTH),
  }));
  await tx.execute(sql`
    update ${tests} t set quarantine_reason = y.r, quarantine_owner = null, quarantine_issue_url = null,
      quarantine_created_at = ${now.toISOString()}::timestamptz, quarantine_expires_at = ${expiresAt.toISOString()}::timestamptz, quarantine_source = 'auto',
      quarantine_all_variants = false, quarantine_via = 'auto', quarantine_actor_id = null, quarantine_actor_name = null, quarantine_actor_email = null
    from json_to_recordset(${JSON.stringify(rows)}::json) as y(id uuid, r text)
    where t.id = y.id`);
  await tx
    .update(projects)
    .set({ quarantineVersion: sql`${projects.quarantineVersion} + 1` })
    .where(eq(projects.id, run.projectId));
  return chosen;
}

/**
 * The ETag of a project's CI list at `now`. The version counts every quarantine and unquarantine,
 * so under one version the stored quarantines are fixed, and the ones in force are those expiring
 * after the latest expiry that has passed: (version, that expiry) names the list exactly, and
 * changes when a quarantine ends by itself. One indexed query (the expiry is the last entry
 * before `now` in tests_project_quarantine_idx), never the list.
 */
export async function quarantineListTag(db: Database, projectId: string, now: Date, variant = ""): Promise<string> {
  const lastExpired = db
    .select({ at: max(tests.quarantineExpiresAt) })
    .from(tests)
    .where(and(eq(tests.projectId, projectId), isNotNull(tests.quarantineExpiresAt), lte(tests.quarantineExpiresAt, now)));
  const [row] = await db
    .select({ version: projects.quarantineVersion, lastExpired: sql<string | Date | null>`(${lastExpired})` })
    .from(projects)
    .where(eq(projects.id, projectId))
    .limit(1);
  if (!row) throw new ApiError("not_found", "Project not found.");
  const expired = row.lastExpired === null ? 0 : new Date(row.lastExpired).getTime();
  // The project and the variant are part of the tag: a tag of one list never matches another's.
  return `"q-${projectId}-${row.version}-${expired.toString(36)}${variant === "" ? "" : `-${encodeURIComponent(variant)}`}"`;
}

/**
 * The quarantines in force in a project now for one variant, as CI needs them to tell which
 * failures to ignore: the variant's own, and those that name every variant (its own first when a
 * test has both), at most MAX_QUARANTINED_TESTS (quarantineTest refuses more), by classname, name
 * and id. An entry's test id is the test's id in `variant`, derived as run processing derives it.
 */
export async function listQuarantinedTests(db: Database, projectId: string, now: Date, variant = "") {
  const rows = await rowsOf<{
    id: string;
    classname: string | null;
    name: string;
    file: string | null;
    reason: string;
    expires_at: string | Date;
    all_variants: boolean;
  }>(
    db.execute(sql`select * from (
        select distinct on (t.classname, case when t.classname is null then t.file end, t.name)
          ${testIdentitySql(sql`t.project_id`, sql`t.classname`, sql`t.file`, sql`t.name`, sql`${variant}::text`)} as id,
          t.classname, t.name, t.file, t.quarantine_reason as reason, t.quarantine_expires_at as expires_at,
          t.quarantine_all_variants as all_variants
        from ${tests} t
        where t.project_id = ${projectId} and t.quarantine_expires_at > ${now.toISOString()}::timestamptz
          and (t.variant = ${variant} or t.quarantine_all_variants)
        order by t.classname, case when t.classname is null then t.file end, t.name, t.variant = ${variant} desc, t.id
      ) q order by q.classname nulls first, q.name, q.id limit ${MAX_QUARANTINED_TESTS}`),
  );
  return rows.map((row) =>
    presentQuarantinedTestForCi({ ...row, expiresAt: new Date(row.expires_at), allVariants: row.all_variants, variant }),
  );
}
