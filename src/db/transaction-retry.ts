/**
 * Postgres may abort a transaction to resolve a conflict with a concurrent one: the victim of a
 * deadlock (40P01), or a serialization failure (40001). Neither says anything about the work
 * itself, and running the whole transaction again is the remedy, so every transaction of the
 * services goes through `transactionWithRetry`: a few attempts, a short randomized pause between
 * them (two victims retrying in lockstep would meet again), then the error is thrown as it is.
 *
 * The work must be safe to run again: everything it does goes through `tx` (rolled back with the
 * attempt), and what it builds in memory starts afresh on each call. Only the outermost
 * transaction can retry: inside one, a conflict has aborted the enclosing transaction too, so a
 * nested call runs once and leaves the retry to its owner.
 */
import { PgTransaction } from "drizzle-orm/pg-core";
import { isTransactionConflict } from "./errors";
import type { Database } from "./types";

/** Attempts in all, the first included. */
export const TRANSACTION_ATTEMPTS = 4;

/** What `db.transaction` hands its callback. */
export type Transaction = Parameters<Parameters<Database["transaction"]>[0]>[0];

export type TransactionRetryOptions = {
  /** Attempts in all (TRANSACTION_ATTEMPTS by default). */
  attempts?: number;
  /** Pause before retry n (1-based); 5–25 ms × n at random by default. */
  delayMs?: (retry: number) => number;
};

const defaultDelayMs = (retry: number) => (5 + Math.random() * 20) * retry;

export async function transactionWithRetry<T>(
  db: Database,
  work: (tx: Transaction) => Promise<T>,
  options: TransactionRetryOptions = {},
): Promise<T> {
  if (db instanceof PgTransaction) return db.transaction(work);
  return retryOnConflict(db, () => db.transaction(work), options);
}

/**
 * The same retries for work that is one statement (its own transaction): a statement that does
 * several things at once (a function, a CTE) can be a deadlock's victim too. Inside a
 * transaction it runs once and leaves the retry to the transaction's owner.
 */
export async function retryOnConflict<T>(db: Database, work: () => Promise<T>, options: TransactionRetryOptions = {}): Promise<T> {
  if (db instanceof PgTransaction) return work();
  const attempts = options.attempts ?? TRANSACTION_ATTEMPTS;
  const delayMs = options.delayMs ?? defaultDelayMs;
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      if (attempt >= attempts || !isTransactionConflict(error)) throw error;
      await new Promise((resolve) => setTimeout(resolve, delayMs(attempt)));
    }
  }
}
