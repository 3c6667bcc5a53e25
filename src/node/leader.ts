/**
 * One process of several at a time for the sweeps that every process runs on its timer (docs/scale-out.md):
 * a transaction-scoped advisory lock taken without waiting. The process that gets it does the sweep while
 * holding it; the others skip this round. The lock goes with the transaction, and with the connection of a
 * process that dies, so a dead leader holds nothing.
 */
import { sql } from "drizzle-orm";
import { rowsOf } from "../db/rows";
import type { Database } from "../db/types";

/** Runs `work` if no other process runs the sweep named `task` now; says whether it ran. */
export async function asLeader(db: Database, task: string, work: () => Promise<unknown>): Promise<boolean> {
  return db.transaction(async (tx) => {
    const [row] = await rowsOf<{ leader: boolean }>(
      tx.execute(sql`select pg_try_advisory_xact_lock(hashtextextended(${`ci-test-analytics: ${task}`}, 0)) as leader`),
    );
    if (!row?.leader) return false;
    await work();
    return true;
  });
}
