/**
 * transactionWithRetry: a transaction Postgres aborted as a deadlock victim (40P01) or for a
 * serialization failure (40001) runs again, a bounded number of times, each attempt's writes
 * rolled back; any other error is thrown at once; a nested call leaves the retry to its owner.
 * On Postgres, also a real deadlock between two transactions, which both complete.
 */
import { eq, like, sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { appSettings } from "../../src/db/schema";
import { TRANSACTION_ATTEMPTS, transactionWithRetry } from "../../src/db/transaction-retry";
import type { Database } from "../../src/db/types";
import type { OpenedDatabase } from "../../src/node/database";
import { openTestDatabase, testDatabaseUrl } from "../support/harness";

let database: OpenedDatabase;
let db: Database;
beforeAll(async () => {
  database = await openTestDatabase();
  db = database.db;
});
afterAll(async () => {
  await database.close();
});

/** An error shaped as Drizzle throws a driver's: the SQLSTATE on the cause. */
const dbError = (code: string, message: string) => new Error(`Failed query: …`, { cause: Object.assign(new Error(message), { code }) });

const noPause = { delayMs: () => 0 };

/** Rows this test wrote under `prefix` (each attempt writes one before it fails). */
const rowsUnder = async (prefix: string) =>
  (
    await db
      .select()
      .from(appSettings)
      .where(like(appSettings.key, `${prefix}%`))
  ).map((r) => r.key);

describe("transactionWithRetry", () => {
  for (const [code, name] of [
    ["40P01", "deadlock detected"],
    ["40001", "could not serialize access due to concurrent update"],
  ] as const) {
    it(`retries ${code} (${name}); only the attempt that commits leaves its writes`, async () => {
      const prefix = `retry-${code}-${crypto.randomUUID()}`;
      let calls = 0;
      const result = await transactionWithRetry(
        db,
        async (tx) => {
          calls++;
          await tx.insert(appSettings).values({ key: `${prefix}-${calls}`, value: "x" });
          if (calls < 3) throw dbError(code, name);
          return "done";
        },
        noPause,
      );
      expect(result).toBe("done");
      expect(calls).toBe(3);
      expect(await rowsUnder(prefix)).toEqual([`${prefix}-3`]);
    });

    it(`gives up on ${code} after ${TRANSACTION_ATTEMPTS} attempts, with the database's error`, async () => {
      const prefix = `give-up-${code}-${crypto.randomUUID()}`;
      let calls = 0;
      const error = dbError(code, name);
      await expect(
        transactionWithRetry(
          db,
          async (tx) => {
            calls++;
            await tx.insert(appSettings).values({ key: `${prefix}-${calls}`, value: "x" });
            throw error;
          },
          noPause,
        ),
      ).rejects.toBe(error);
      expect(calls).toBe(TRANSACTION_ATTEMPTS);
      expect(await rowsUnder(prefix)).toEqual([]);
    });
  }

  it("does not retry any other error", async () => {
    for (const error of [
      dbError("23505", "duplicate key value violates unique constraint"),
      dbError("ECONNRESET", "read ECONNRESET"),
      new Error("The report has more than 100000 test cases."),
    ]) {
      let calls = 0;
      await expect(
        transactionWithRetry(
          db,
          async () => {
            calls++;
            throw error;
          },
          noPause,
        ),
      ).rejects.toBe(error);
      expect(calls).toBe(1);
    }
  });

  it("pauses between attempts as told", async () => {
    const pauses: number[] = [];
    let calls = 0;
    await transactionWithRetry(
      db,
      async () => {
        if (++calls < 4) throw dbError("40P01", "deadlock detected");
      },
      { delayMs: (retry) => (pauses.push(retry), 0) },
    );
    expect(pauses).toEqual([1, 2, 3]);
  });

  it("inside a transaction it runs once: the conflict aborted the enclosing transaction, whose owner retries", async () => {
    let inner = 0;
    let outer = 0;
    await transactionWithRetry(
      db,
      async (tx) => {
        outer++;
        await expect(
          transactionWithRetry(tx, async () => {
            inner++;
            throw dbError("40P01", "deadlock detected");
          }),
        ).rejects.toThrow();
      },
      noPause,
    );
    expect([outer, inner]).toEqual([1, 1]);
  });
});

// PGlite has one session, so two of its transactions can never wait for each other: this part
// exists only when the suite runs on Postgres (it is not registered on PGlite, not skipped).
if (await testDatabaseUrl()) {
  describe("transactionWithRetry on Postgres", () => {
    it("two transactions that lock two rows in opposite orders deadlock; the victim runs again and both complete", async () => {
      const [a, b] = [`deadlock-a-${crypto.randomUUID()}`, `deadlock-b-${crypto.randomUUID()}`];
      await db.insert(appSettings).values([
        { key: a, value: "0" },
        { key: b, value: "0" },
      ]);
      const bump = (tx: Database, key: string) =>
        tx
          .update(appSettings)
          .set({ value: sql`(${appSettings.value}::int + 1)::text` })
          .where(eq(appSettings.key, key));
      // Each first attempt takes its first row, then waits until the other took its own: the deadlock is certain.
      let firstLocks = 0;
      const bothLocked = new Promise<void>((resolve) => {
        const check = setInterval(() => firstLocks >= 2 && (clearInterval(check), resolve()), 5);
      });
      const calls = { ab: 0, ba: 0 };
      const inOrder = (first: string, second: string, name: "ab" | "ba") =>
        transactionWithRetry(db, async (tx) => {
          const attempt = ++calls[name];
          await bump(tx, first);
          if (attempt === 1) {
            firstLocks++;
            await bothLocked;
          }
          await bump(tx, second);
        });
      await Promise.all([inOrder(a, b, "ab"), inOrder(b, a, "ba")]);
      expect(calls.ab + calls.ba).toBe(3);
      const values = await db
        .select({ key: appSettings.key, value: appSettings.value })
        .from(appSettings)
        .where(like(appSettings.key, "deadlock-%"));
      expect(values.filter((row) => row.key === a || row.key === b).map((row) => row.value)).toEqual(["2", "2"]);
    });
  });
}
