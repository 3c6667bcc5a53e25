/**
 * A project's CODEOWNERS (docs/codeowners.md): stored as uploaded, and the owners of every test of
 * the project recomputed from it in the same transaction. New tests get theirs when run
 * processing first stores them (advanceRunTests), from the same stored file.
 */
import { and, eq, isNotNull, sql } from "drizzle-orm";
import { projectCodeowners, tests } from "../../db/schema";
import { transactionWithRetry } from "../../db/transaction-retry";
import type { Database } from "../../db/types";
import { type IgnoredLine, OwnersMatcher, parseCodeowners } from "../../lib/codeowners";
import type { ServiceDeps } from "../shared/context";
import { lockProjectTests } from "./tests-state";
import { yieldToEventLoop as pause } from "../../lib/yield-to-event-loop";

/** Ignored lines listed in an answer at most (all are counted). */
export const MAX_IGNORED_LINES_LISTED = 1_000;
/** Files per statement when owners are written back. */
const FILES_PER_UPDATE = 5_000;
/** Files matched between two pauses: a large recompute lets other work run. */
const FILES_PER_SLICE = 500;

export type CodeownersResult = {
  rules_count: number;
  ignored_lines: IgnoredLine[];
  ignored_lines_count: number;
  changed: boolean;
  tests_count: number;
  tests_with_owners_count: number;
  files_over_budget_count: number;
  updated_at: string;
};

async function distinctFiles(db: Database, projectId: string): Promise<string[]> {
  const rows = await db
    .selectDistinct({ file: tests.file })
    .from(tests)
    .where(and(eq(tests.projectId, projectId), isNotNull(tests.file)));
  return rows.map((row) => row.file!);
}

/** Each file's owners; the matcher keeps its answers, so asking again for the same files is free. */
async function ownersOfFiles(matcher: OwnersMatcher, files: readonly string[]): Promise<{ f: string; o: readonly string[] }[]> {
  const owned: { f: string; o: readonly string[] }[] = [];
  for (const [index, file] of files.entries()) {
    if (index > 0 && index % FILES_PER_SLICE === 0) await pause();
    owned.push({ f: file, o: matcher.ownersOf(file) });
  }
  return owned;
}

async function ownerCounts(db: Database, projectId: string): Promise<{ tests: number; owned: number }> {
  const [counts] = await db
    .select({ tests: sql<number>`count(*)::int`, owned: sql<number>`(count(*) filter (where cardinality(${tests.owners}) > 0))::int` })
    .from(tests)
    .where(eq(tests.projectId, projectId));
  return counts ?? { tests: 0, owned: 0 };
}

/**
 * Stores a project's CODEOWNERS (replacing the previous one) and recomputes the owners of its
 * tests, under the lock of the project's tests' rows that run processing takes: a run processed
 * meanwhile stores its new tests either before (and they are recomputed here) or after (and gets
 * this file). The same file again changes nothing (`changed: false`, `updated_at` kept). The
 * files' owners are worked out before the lock, then checked again for files that arrived since.
 */
export async function putCodeowners(deps: Pick<ServiceDeps, "db" | "clock">, projectId: string, text: string): Promise<CodeownersResult> {
  const { rules, ignoredLines } = parseCodeowners(text);
  const matcher = new OwnersMatcher(rules);
  const [stored] = await deps.db
    .select({ same: sql<boolean>`${projectCodeowners.content} = ${text}` })
    .from(projectCodeowners)
    .where(eq(projectCodeowners.projectId, projectId));
  if (!stored?.same) await ownersOfFiles(matcher, await distinctFiles(deps.db, projectId));

  const { changed, updatedAt, counts } = await transactionWithRetry(deps.db, async (tx) => {
    await lockProjectTests(tx, projectId);
    const now = deps.clock.now();
    const [written] = await tx
      .insert(projectCodeowners)
      .values({ projectId, content: text, rulesCount: rules.length, updatedAt: now })
      .onConflictDoUpdate({
        target: projectCodeowners.projectId,
        set: { content: text, rulesCount: rules.length, updatedAt: now },
        setWhere: sql`${projectCodeowners.content} is distinct from excluded.content`,
      })
      .returning({ updatedAt: projectCodeowners.updatedAt });
    if (!written) {
      const [kept] = await tx
        .select({ updatedAt: projectCodeowners.updatedAt })
        .from(projectCodeowners)
        .where(eq(projectCodeowners.projectId, projectId));
      return { changed: false, updatedAt: kept!.updatedAt, counts: await ownerCounts(tx, projectId) };
    }
    const owned = await ownersOfFiles(matcher, await distinctFiles(tx, projectId));
    for (let start = 0; start < owned.length; start += FILES_PER_UPDATE) {
      const chunk = JSON.stringify(owned.slice(start, start + FILES_PER_UPDATE));
      await tx.execute(sql`
        update ${tests} t set owners = y.o
        from json_to_recordset(${chunk}::json) as y(f text, o text[])
        where t.project_id = ${projectId}::uuid and t.file = y.f and t.owners is distinct from y.o`);
    }
    return { changed: true, updatedAt: written.updatedAt, counts: await ownerCounts(tx, projectId) };
  });
  return {
    rules_count: rules.length,
    ignored_lines: ignoredLines.slice(0, MAX_IGNORED_LINES_LISTED),
    ignored_lines_count: ignoredLines.length,
    changed,
    tests_count: counts.tests,
    tests_with_owners_count: counts.owned,
    files_over_budget_count: changed ? matcher.pathsOverBudget : 0,
    updated_at: updatedAt.toISOString(),
  };
}
