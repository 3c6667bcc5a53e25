/**
 * BEGIN and COMMIT folded into a transaction's first and last statements (issue 18): on the
 * Worker every message the client waits for costs a round trip to the database, and a
 * transaction's BEGIN and COMMIT are two of them.
 *
 * The simple query protocol carries several statements in one Query message (`begin; <first
 * statement>`, `<last statement>; commit`), but only statements without parameters. So:
 *
 * - `inlined(statement)` writes a statement's parameters as literals (`inlineLiteral`), when every
 *   one of them can be written safely; otherwise it leaves the statement as it is (parameters,
 *   no fold: slower, never wrong).
 * - `lastStatement(tx, statement)` does the same and marks the statement as the transaction's last
 *   (`COMMIT_AFTER`, a comment at its start), unless the transaction is nested in another (a
 *   savepoint, whose owner commits).
 * - `foldTransactionBoundaries(client)` teaches a node-postgres or Neon client (they share the
 *   client's interface) to send the transaction's BEGIN with its next statement when that has no
 *   parameters, and a marked statement with COMMIT after it; the COMMIT the transaction's owner
 *   (Drizzle) then sends is answered by the client itself, as the transaction has ended.
 *
 * PGlite runs in process (no round trip to save) and its queries take one statement each: there
 * the same statements run inlined, and Drizzle's BEGIN and COMMIT are sent as usual.
 *
 * Once a marked statement has committed, nothing can roll the transaction back: it must be the
 * last thing the transaction does, with no work after it that may fail.
 */
import { type SQL, sql } from "drizzle-orm";
import { PgDialect } from "drizzle-orm/pg-core";

/** Marks a statement (text without parameters) to be sent with COMMIT after it by a folding client. */
export const COMMIT_AFTER = "/* then commit */ ";

/** A value that cannot be written as a literal safely: its statement keeps its parameters. */
class NotInlinable extends Error {}

/**
 * A parameter's value as an SQL literal that means what the parameter meant. node-postgres and
 * the Neon driver send every parameter as text of unspecified type, and Postgres infers its type
 * from where it stands; a quoted literal is also of unknown type, inferred the same way. So every
 * value, numbers and booleans included, is written as the text those drivers would send, quoted.
 *
 * The quoting is an escape string (E'…'): a backslash is doubled and a quote doubled, whatever
 * `standard_conforming_strings` says, so no content can end the literal early. Text with a NUL
 * cannot be sent in a Query message (it ends the message's string) and is refused, as are values
 * whose text form the drivers derive otherwise (dates, in the process's time zone; arrays,
 * buffers, objects): the services pass dates as ISO text.
 */
export function inlineLiteral(value: unknown): string {
  if (value === null || value === undefined) return "null";
  let text: string;
  if (typeof value === "string") text = value;
  else if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new NotInlinable(`not a finite number: ${value}`);
    text = String(value);
  } else if (typeof value === "bigint") text = value.toString();
  else if (typeof value === "boolean") text = value ? "true" : "false";
  else throw new NotInlinable(`a parameter of type ${Array.isArray(value) ? "array" : value instanceof Date ? "Date" : typeof value}`);
  if (text.includes("\0")) throw new NotInlinable("text with a NUL character");
  return `E'${text.replace(/\\/g, "\\\\").replace(/'/g, "''")}'`;
}

/** Renders statements as Drizzle does, each parameter written by inlineLiteral in its place. */
class InliningDialect extends PgDialect {
  /** Drizzle calls it with the parameter's value after its index. */
  override escapeParam(_index: number, value?: unknown): string {
    return inlineLiteral(value);
  }
}
const inliningDialect = new InliningDialect();

/** The statement's text with its parameters as literals, or null when one of them cannot be. */
function inlineText(statement: SQL): string | null {
  try {
    return inliningDialect.sqlToQuery(statement).sql;
  } catch (error) {
    if (error instanceof NotInlinable) return null;
    throw error;
  }
}

/**
 * The statement without parameters (its values written as literals), so that a folding client
 * can send a pending BEGIN with it; the statement as it is when a value cannot be inlined.
 */
export function inlined(statement: SQL): SQL {
  const text = inlineText(statement);
  return text === null ? statement : sql.raw(text);
}

/**
 * The transaction's last statement, inlined and marked so that a folding client sends COMMIT
 * with it. Left as it is inside a nested transaction (Drizzle's savepoint: its owner commits) or
 * when a value cannot be inlined; the transaction's owner then commits as usual.
 */
export function lastStatement(tx: unknown, statement: SQL): SQL {
  if ((tx as { nestedIndex?: number }).nestedIndex !== 0) return statement;
  const text = inlineText(statement);
  return text === null ? statement : sql.raw(`${COMMIT_AFTER}${text}`);
}

/** What a node-postgres or Neon client answers a query with (one result per statement of a Query message). */
type QueryResult = { command?: string | null; rows: unknown[]; rowCount: number | null; fields: unknown[] };

/** The part of a node-postgres (or Neon driver) client this needs. */
export type FoldableClient = { query: (...args: never[]) => unknown };

const BEGIN = /^begin(\s[^;]*)?$/i;
const COMMIT = /^commit$/i;
const ROLLBACK = /^rollback$/i;
const FOLDED = Symbol("transaction boundaries folded");

const answered = (command: string): Promise<QueryResult> => Promise.resolve({ command, rows: [], rowCount: null, fields: [] });

/**
 * Installs the folding on a client (idempotent). Only calls that Drizzle's transactions make are
 * changed: promise-style queries (no callback, not a stream). A BEGIN is held back and sent in
 * the same Query message as the next statement when that one has no parameters (else just
 * before it); a statement marked COMMIT_AFTER in a transaction is sent with COMMIT after it; and
 * the COMMIT that follows is then answered here. Each folded message's answers are checked (BEGIN
 * first, COMMIT last): a statement that fails fails the message, Postgres skips the rest (no
 * COMMIT), and the owner's ROLLBACK is sent as usual.
 */
export function foldTransactionBoundaries(client: FoldableClient): void {
  const target = client as unknown as { query: (...args: unknown[]) => unknown; [FOLDED]?: true };
  if (target[FOLDED]) return;
  target[FOLDED] = true;
  const send = target.query.bind(client) as (...args: unknown[]) => unknown;
  /** The text of a held-back BEGIN, to go with the next statement. */
  let pendingBegin: string | null = null;
  /** In a transaction the client began (so a marked statement may commit it). */
  let inTransaction = false;
  /** A folded COMMIT ended the transaction: the owner's COMMIT needs no round trip. */
  let committed = false;

  target.query = (...args: unknown[]): unknown => {
    const [config, values] = args;
    const options =
      typeof config === "object" && config !== null ? (config as { text?: unknown; values?: unknown; submit?: unknown }) : null;
    const text = typeof config === "string" ? config : options?.text;
    // Callbacks (the pool's own queries) and streams (COPY) go as they are, after a held-back BEGIN.
    if (typeof text !== "string" || typeof args.at(-1) === "function" || typeof options?.submit === "function") return sendAfterBegin(args);
    const params = values ?? options?.values;
    const parameterless = params === undefined || (Array.isArray(params) && params.length === 0);
    const statement = text.trim();
    if (parameterless && BEGIN.test(statement) && !inTransaction) {
      pendingBegin = statement;
      inTransaction = true;
      committed = false;
      return answered("BEGIN");
    }
    if (parameterless && (COMMIT.test(statement) || ROLLBACK.test(statement))) {
      const skip = pendingBegin !== null || (committed && COMMIT.test(statement));
      pendingBegin = null;
      inTransaction = false;
      committed = false;
      // Nothing was sent since BEGIN (so nothing to end), or the folded COMMIT ended the transaction.
      if (skip) return answered(COMMIT.test(statement) ? "COMMIT" : "ROLLBACK");
      return send(...args);
    }
    if (!parameterless) return sendAfterBegin(args);
    const commitAfter = inTransaction && statement.startsWith(COMMIT_AFTER.trim());
    const begin = pendingBegin;
    pendingBegin = null;
    if (begin === null && !commitAfter) return send(...args);
    // A line break before each `;`: a statement ending in a `--` comment cannot swallow what follows.
    const folded = `${begin === null ? "" : `${begin};\n`}${text}${commitAfter ? "\n;\ncommit" : ""}`;
    const foldedConfig = typeof config === "string" ? { text: folded } : { ...(config as object), text: folded };
    return (send(foldedConfig, ...args.slice(1)) as Promise<QueryResult | QueryResult[]>).then((answer) => {
      // One result per statement (an array for several): BEGIN's first, COMMIT's last, the statement's own between
      // (several when its text holds several statements, as a migration's may: handed back as they came).
      const results = Array.isArray(answer) ? answer : [answer];
      const own = results.slice(begin === null ? 0 : 1, commitAfter ? -1 : undefined);
      if (own.length === 0) throw new Error("a folded statement was not answered");
      if (begin !== null && results[0]!.command !== "BEGIN") throw new Error("a folded BEGIN was not answered as one");
      if (commitAfter) {
        if (results.at(-1)!.command !== "COMMIT") throw new Error("a folded COMMIT was not answered as one");
        committed = true;
      }
      return own.length === 1 ? own[0] : own;
    });
  };

  /** Any other call: a held-back BEGIN goes first (in order on the client's queue), then the call as it is. */
  function sendAfterBegin(args: unknown[]): unknown {
    const begin = pendingBegin;
    if (begin === null) return send(...args);
    pendingBegin = null;
    const began = send(begin) as Promise<unknown>;
    const last = args.at(-1);
    const isCallbackOrStream = typeof last === "function" || typeof (args[0] as { submit?: unknown })?.submit === "function";
    if (isCallbackOrStream) {
      // Queued behind BEGIN on the client (BEGIN fails only with its connection, which then fails the call too).
      began.catch(() => {});
      return send(...args);
    }
    // Queued now, right behind BEGIN: a call made before BEGIN is answered cannot overtake this one.
    const sent = send(...args) as Promise<unknown>;
    return Promise.all([began, sent]).then(([, answer]) => answer);
  }
}
