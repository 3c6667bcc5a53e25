import { Pool, neonConfig } from "@neondatabase/serverless";
import { type FoldableClient, foldTransactionBoundaries } from "../db/transaction-boundaries";
import { consoleLogger } from "../lib/logger";
import type { WorkerEnv } from "./env";

/**
 * The driver's WebSocket, minus one crash: when the database drops the connection, ending the
 * pool sends a Terminate message on a socket that is already closed, and workerd throws that
 * send() as an uncaught exception outside any request. A message to a closed socket cannot be
 * delivered anyway, so it is dropped.
 */
class ClosedSafeWebSocket extends WebSocket {
  override send(data: string | ArrayBuffer | ArrayBufferView): void {
    if (this.readyState === WebSocket.CLOSING || this.readyState === WebSocket.CLOSED) return;
    super.send(data);
  }
}
neonConfig.webSocketConstructor = ClosedSafeWebSocket;

/**
 * Points the Neon driver at a local WebSocket bridge (development and tests only; production leaves
 * neonConfig alone). Only the transport differs: plain `ws://` on loopback instead of `wss://`.
 * Connection pipelining stays at the driver's production default (`pipelineConnect: "password"`:
 * startup, password and first query in one flight); the bridge drops the password when the local
 * server trusts the connection, as Neon's proxy consumes it (src/node/local-neon/wire-meter.ts).
 */
export function configureLocalProxy(env: WorkerEnv): void {
  if (!env.LOCAL_NEON_PROXY) return;
  const proxy = env.LOCAL_NEON_PROXY;
  neonConfig.wsProxy = (host, port) => `${proxy}/v2?address=${host}:${port}`;
  neonConfig.useSecureWebSocket = false;
  neonConfig.pipelineTLS = false;
  neonConfig.forceDisablePgSSL = true;
}

/** application_name of the Worker's sessions, followed by `:fetch` or `:queue`. */
const WORKER_APPLICATION_NAME = "ci-analytics-worker";

/**
 * A Pool for this request only. Its clients fold transactions' BEGIN and COMMIT into their first
 * and last statements where they can (src/db/transaction-boundaries.ts). Clients get error
 * listeners: when the server closes an ended client's WebSocket, workerd raises "Network
 * connection lost", which would otherwise be thrown as an unhandled 'error' event.
 */
export function requestPool(env: WorkerEnv, handler: "fetch" | "queue" | "scheduled" | "test"): Pool {
  // The session says which handler holds it (pg_stat_activity; the local bridge counts by it).
  const pool = new Pool({ connectionString: env.DATABASE_URL, application_name: `${WORKER_APPLICATION_NAME}:${handler}` });
  // Idle clients report the server closing their socket while the pool is being ended; that is the normal end of a request.
  pool.on("error", (error: Error) => {
    if (!(pool as unknown as { ending?: boolean }).ending) consoleLogger.error("postgres pool error", { error: error.message });
  });
  pool.on(
    "connect",
    (client: { on(event: "error", listener: (error: Error) => void): unknown; _ending?: boolean; query: FoldableClient["query"] }) => {
      // BEGIN and COMMIT ride with a transaction's first and last statements: two round trips fewer.
      foldTransactionBoundaries(client);
      client.on("error", (error) => {
        if (!client._ending) consoleLogger.error("postgres client error", { error: error.message });
      });
    },
  );
  return pool;
}
