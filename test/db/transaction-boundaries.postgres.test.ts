/**
 * A folding node-postgres client (src/db/transaction-boundaries.ts) under transactionWithRetry, on
 * a real server: the messages it sends (recorded beneath the folding), what another connection
 * sees afterwards, and the transaction's guarantees kept: an error between the first and last
 * statements, or in the last, leaves nothing written and the connection idle; a conflict in the
 * last statement is retried whole; a nested transaction's last statement does not commit its
 * owner's transaction.
 *
 * Postgres only: collected only when the suite runs on Postgres (vitest.config.ts).
 */
import { like, sql } from "drizzle-orm";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testDatabaseUrl as theTestDatabaseUrl } from "../support/harness";
import { rowsOf } from "../../src/db/rows";
import { appSettings } from "../../src/db/schema";
import { inlined, lastStatement } from "../../src/db/transaction-boundaries";
import { transactionWithRetry } from "../../src/db/transaction-retry";
import type { Database } from "../../src/db/types";
import { AWKWARD } from "../support/awkward-text";
import { recordingPool } from "../support/recording-pool";

const testDatabaseUrl = await theTestDatabaseUrl();
if (!testDatabaseUrl) throw new Error("transaction-boundaries.postgres.test.ts runs on Postgres only (TEST_DATABASE_URL).");

/** One connection, so every transaction reuses the one before it. */
let pool: pg.Pool;
let db: Database;
let other: pg.Client;
let sent: string[];

beforeAll(async () => {
  ({ pool, db, sent } = recordingPool(testDatabaseUrl));
  other = new pg.Client({ connectionString: testDatabaseUrl });
  await other.connect();
  // A conflict on demand: the last statement calls it on the attempt that is to fail.
  await other.query(`create or replace function boundaries_test_conflict() returns text language plpgsql as $$
    begin raise exception 'could not serialize access' using errcode = '40001'; end $$`);
});
afterAll(async () => {
  await other?.query("drop function if exists boundaries_test_conflict()");
  await other?.end();
  await pool?.end();
});

/** The keys under `prefix`, as another connection sees them (only what was committed). */
const committed = async (prefix: string) =>
  (await other.query<{ key: string; value: string }>("select key, value from app_settings where key like $1 order by key", [`${prefix}%`]))
    .rows;

/** Whether the pool's connection is in a transaction (a new one would start with the next statement). */
const idle = async () =>
  (await db.execute(
    sql`select (xact_start = statement_timestamp()) as idle from pg_stat_activity where pid = pg_backend_pid()`,
  )) as unknown as { rows: { idle: boolean }[] };

describe("a folded transaction on node-postgres", () => {
  it("sends BEGIN with the first statement and COMMIT with the last: three messages for three statements", async () => {
    const prefix = `fold-${crypto.randomUUID()}`;
    sent.length = 0;
    const result = await transactionWithRetry(db, async (tx) => {
      const [first] = await rowsOf<{ n: number }>(tx.execute(inlined(sql`select ${7}::int as n`)));
      await tx.insert(appSettings).values({ key: `${prefix}-a`, value: String(first!.n) });
      const [last] = await rowsOf<{ key: string }>(
        tx.execute(
          lastStatement(tx, sql`insert into ${appSettings} (key, value) values (${`${prefix}-b`}, ${"it's \\ $$ ;commit;"}) returning key`),
        ),
      );
      return last!.key;
    });
    expect(result).toBe(`${prefix}-b`);
    expect(sent).toHaveLength(3);
    expect(sent[0]).toMatch(/^begin;\nselect E'7'::int as n$/);
    expect(sent[1]).toMatch(/^insert into "app_settings"/);
    expect(sent[2]).toMatch(/^\/\* then commit \*\/ insert into "app_settings" .*\n;\ncommit$/s);
    expect(await committed(prefix)).toEqual([
      { key: `${prefix}-a`, value: "7" },
      { key: `${prefix}-b`, value: "it's \\ $$ ;commit;" },
    ]);
    expect((await idle()).rows[0]!.idle).toBe(true);
  });

  it("a first statement with parameters keeps its place: a statement issued before it is answered runs after it", async () => {
    const prefix = `order-${crypto.randomUUID()}`;
    sent.length = 0;
    await transactionWithRetry(db, async (tx) => {
      // Not awaited in turn: the first (with parameters, so BEGIN goes on its own) and the second are both queued at once.
      const first = tx.insert(appSettings).values({ key: `${prefix}-1`, value: "first" });
      const second = tx.execute(inlined(sql`update ${appSettings} set value = 'second' where key = ${`${prefix}-1`}`));
      await Promise.all([first, second]);
    });
    expect(await committed(prefix)).toEqual([{ key: `${prefix}-1`, value: "second" }]);
    expect(sent.slice(0, 3).map((text) => text.split(" ")[0])).toEqual(["begin", "insert", "update"]);
  });

  it("stores awkward text exactly through the folded last statement", async () => {
    const prefix = `awkward-${crypto.randomUUID()}`;
    const rows = AWKWARD.map((value, i) => ({ key: `${prefix}-${String(i).padStart(2, "0")}`, value }));
    await transactionWithRetry(db, async (tx) => {
      await tx.execute(inlined(sql`select 1`));
      await tx.execute(
        lastStatement(
          tx,
          sql`insert into ${appSettings} (key, value) select x.key, x.value from json_to_recordset(${JSON.stringify(rows)}::json) as x(key text, value text)`,
        ),
      );
    });
    expect(await committed(prefix)).toEqual(rows);
  });

  it("an error between the first and last statements leaves nothing written and the connection idle", async () => {
    const prefix = `between-${crypto.randomUUID()}`;
    sent.length = 0;
    await expect(
      transactionWithRetry(db, async (tx) => {
        await tx.execute(inlined(sql`insert into ${appSettings} (key, value) values (${`${prefix}-a`}, ${"x"})`));
        throw new Error("the report is unreadable");
      }),
    ).rejects.toThrow("the report is unreadable");
    expect(sent.at(-1)).toBe("rollback");
    expect(await committed(prefix)).toEqual([]);
    expect((await idle()).rows[0]!.idle).toBe(true);
  });

  it("a last statement that fails commits nothing, and the connection serves the next transaction", async () => {
    const prefix = `last-fails-${crypto.randomUUID()}`;
    await expect(
      transactionWithRetry(db, async (tx) => {
        await tx.execute(inlined(sql`insert into ${appSettings} (key, value) values (${`${prefix}-a`}, ${"x"})`));
        // The same key again: a unique violation in the marked statement, so Postgres skips its COMMIT.
        await tx.execute(lastStatement(tx, sql`insert into ${appSettings} (key, value) values (${`${prefix}-a`}, ${"y"})`));
      }),
    ).rejects.toMatchObject({ cause: { code: "23505" } });
    expect(await committed(prefix)).toEqual([]);
    expect((await idle()).rows[0]!.idle).toBe(true);
    await transactionWithRetry(db, async (tx) => {
      await tx.execute(inlined(sql`select 1`));
      await tx.execute(lastStatement(tx, sql`insert into ${appSettings} (key, value) values (${`${prefix}-b`}, ${"z"})`));
    });
    expect(await committed(prefix)).toEqual([{ key: `${prefix}-b`, value: "z" }]);
  });

  it("a conflict in the last statement is retried whole; only the attempt that commits leaves its writes", async () => {
    const prefix = `conflict-${crypto.randomUUID()}`;
    let attempts = 0;
    await transactionWithRetry(
      db,
      async (tx) => {
        attempts++;
        await tx.execute(inlined(sql`insert into ${appSettings} (key, value) values (${`${prefix}-${attempts}`}, ${"first"})`));
        await tx.execute(
          lastStatement(
            tx,
            sql`update ${appSettings} set value = ${attempts === 1 ? sql`boundaries_test_conflict()` : sql`${"last"}`} where key = ${`${prefix}-${attempts}`}`,
          ),
        );
      },
      { delayMs: () => 0 },
    );
    expect(attempts).toBe(2);
    expect(await committed(prefix)).toEqual([{ key: `${prefix}-2`, value: "last" }]);
  });

  it("a nested transaction's last statement does not commit its owner's transaction", async () => {
    const prefix = `nested-${crypto.randomUUID()}`;
    await expect(
      transactionWithRetry(db, async (outer) => {
        await outer.execute(inlined(sql`insert into ${appSettings} (key, value) values (${`${prefix}-a`}, ${"x"})`));
        await transactionWithRetry(outer as unknown as Database, async (inner) => {
          await inner.execute(lastStatement(inner, sql`insert into ${appSettings} (key, value) values (${`${prefix}-b`}, ${"y"})`));
        });
        throw new Error("the owner fails after the nested transaction");
      }),
    ).rejects.toThrow("the owner fails");
    expect(await committed(prefix)).toEqual([]);
    expect(
      await db
        .select()
        .from(appSettings)
        .where(like(appSettings.key, `${prefix}%`)),
    ).toEqual([]);
  });
});
