/**
 * COPY … FROM STDIN for the bulk writes of run processing, where the driver offers it.
 *
 * Storing a 10,000-case run is mostly Postgres parsing and inserting rows: COPY does that in
 * about half the time of the best INSERT (`json_to_recordset`, BENCHMARKS.md). Only node-postgres
 * speaks the COPY sub-protocol (through pg-copy-streams), so the Node opener registers a
 * `CopyIn` for the databases it opens on a Postgres server; PGlite and the Neon driver on the
 * Worker have none and services fall back to INSERT. The registry is keyed by the database
 * object services already receive, so no other dependency needs threading through.
 */
import type { Database } from "./types";

/** An open COPY on a transaction's connection: nothing else may run on it until `end` or `abort`. */
export type CopySink = {
  /** Rows in COPY's text format (`encodeCopyRow`). */
  write(rows: string): void;
  /** Sends the end of data and resolves once Postgres accepted every row (rejects with its error otherwise). */
  end(): Promise<void>;
  /** Cancels the COPY (Postgres discards its rows); resolves when the connection is usable again. */
  abort(reason: Error): Promise<void>;
};

/** Starts `statement` (a `COPY … FROM STDIN`) inside `tx`, or returns null where the driver cannot. */
export type CopyIn = (tx: Database, statement: string) => CopySink | null;

const copyInByDatabase = new WeakMap<object, CopyIn>();

export function registerCopyIn(db: Database, copyIn: CopyIn): void {
  copyInByDatabase.set(db, copyIn);
}

/** Opens a COPY on `tx` if `db` (the database `tx` belongs to) registered a way to. */
/** The way `db` registered to COPY, if any (benchmarks swap it for a sink and put it back). */
export const registeredCopyIn = (db: Database): CopyIn | undefined => copyInByDatabase.get(db);

export function openCopy(db: Database, tx: Database, statement: string): CopySink | null {
  return copyInByDatabase.get(db)?.(tx, statement) ?? null;
}

// COPY's text format: backslash, newline, carriage return and tab are escaped; \N is NULL.
const SPECIAL = /[\\\n\r\t]/g;
const HAS_SPECIAL = /[\\\n\r\t]/;
const ESCAPES: Record<string, string> = { "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t" };
const escapeField = (value: string): string => (HAS_SPECIAL.test(value) ? value.replace(SPECIAL, (c) => ESCAPES[c]!) : value);

/** One row of COPY's text format, with its newline. Strings are escaped; null is NULL. */
export function encodeCopyRow(values: readonly (string | number | null)[]): string {
  let row = "";
  for (let i = 0; i < values.length; i++) {
    const value = values[i];
    if (i > 0) row += "\t";
    row += value === null || value === undefined ? "\\N" : typeof value === "number" ? String(value) : escapeField(value);
  }
  return `${row}\n`;
}
