/**
 * What a database error means for the one who meets it. The drivers (node-postgres, PGlite, the
 * Neon driver) and Drizzle wrap errors differently: Drizzle puts the driver's error in `cause`,
 * so every test walks the cause chain a few levels deep.
 */

function* errorChain(error: unknown): Generator<Error> {
  for (let current: unknown = error, depth = 0; current instanceof Error && depth < 4; current = current.cause, depth++) yield current;
}

/** Socket-level failures of a connection to the database: refused, reset, broken pipe, unreachable. */
const SOCKET_ERRORS = new Set(["ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "EAI_AGAIN"]);

/**
 * Messages of connections that died without a code: node-postgres's "Connection terminated
 * unexpectedly" and "…is not queryable" (a client whose connection failed, e.g. when Drizzle sends
 * ROLLBACK after the failure), workerd's "Network connection lost".
 */
const CONNECTION_LOST = /ECONNREFUSED|ECONNRESET|EPIPE|Connection terminated|not queryable|Network connection lost|too many clients/i;

/**
 * The database cannot take the work right now (too many connections, server starting or shutting
 * down, the connection refused or lost): retryable later, and saying nothing about the request
 * or the run itself. SQLSTATE classes 08 (connection exception), 57P01–57P03 (operator
 * intervention) and 53300 (too many connections), plus the socket failures above.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  for (const current of errorChain(error)) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === "string" && (code === "53300" || code.startsWith("08") || /^57P0[1-3]$/.test(code) || SOCKET_ERRORS.has(code)))
      return true;
    if (CONNECTION_LOST.test(current.message)) return true;
  }
  return false;
}

/**
 * Postgres aborted the transaction to resolve a conflict with a concurrent one: a serialization
 * failure (40001) or a deadlock (40P01). Running the whole transaction again is the remedy.
 */
export function isTransactionConflict(error: unknown): boolean {
  for (const current of errorChain(error)) {
    const code = (current as { code?: unknown }).code;
    if (code === "40001" || code === "40P01") return true;
  }
  return false;
}
