/**
 * The database side of running the Worker locally (`npm run dev`, the workerd tests): opens and
 * migrates the database exactly as `npm start` does (src/node/database.ts), serves an embedded
 * PGlite over the wire protocol, and starts the WebSocket bridge the Neon driver inside workerd
 * connects through (the Worker's LOCAL_NEON_PROXY binding).
 *
 * - DATABASE_URL unset → PGlite in ./.data/pglite; `memory://` → in-memory PGlite. The Worker gets
 *   the connection string of the wire server.
 * - `postgres://…` on a loopback host → the Worker connects to that server through the bridge.
 * - `postgres://…` elsewhere → the bridge only reaches loopback, so no LOCAL_NEON_PROXY is
 *   returned: the Neon driver then connects the way it does in production (a Neon endpoint).
 */
import type { PGlite } from "@electric-sql/pglite";
import { type OpenedDatabase, isPostgresUrl, openDatabase } from "../database";
import { type PgliteWireServer, servePglite } from "./pglite-wire-server";
import { type BridgeEmulation, type WebSocketBridge, parseLoopbackTarget, startWebSocketBridge } from "./websocket-bridge";

export type { BridgeCounters, BridgeReport } from "./websocket-bridge";
export { countersBetween, parseEmulation } from "./wire-meter";

export type LocalDatabase = {
  /** The same database object `npm start` uses (Node side: seeding, settings). */
  database: OpenedDatabase;
  /** The Worker's DATABASE_URL binding. */
  workerDatabaseUrl: string;
  /** The Worker's LOCAL_NEON_PROXY binding (`127.0.0.1:PORT`), or null when the target is not on this machine. */
  localNeonProxy: string | null;
  /** The bridge (its counters and emulated network), or null when there is none. */
  bridge: WebSocketBridge | null;
  /** Stops the bridge and the wire server, then closes the database. */
  close(): Promise<void>;
};

export type StartLocalDatabaseOptions = {
  databaseUrl?: string;
  /** Data directory for the persisted PGlite (default ./.data/pglite). */
  dataDir?: string;
  /** Port of the bridge (default: any free port). */
  bridgePort?: number;
  /** Skip migrations (the caller migrated already). */
  migrate?: boolean;
  /** The network the bridge emulates between the Worker and the database (none by default; docs/edge-path.md). */
  emulation?: Partial<BridgeEmulation>;
  log?: (message: string) => void;
};

/** True when the Postgres URL names this machine (the only targets the bridge will reach). */
function isLoopbackPostgresUrl(url: string): boolean {
  const parsed = new URL(url);
  const target = parseLoopbackTarget(`${parsed.hostname}:${parsed.port || 5432}`);
  return !("error" in target);
}

export async function startLocalDatabase(options: StartLocalDatabaseOptions = {}): Promise<LocalDatabase> {
  const database = await openDatabase(options.databaseUrl, options.dataDir ? { dataDir: options.dataDir } : {});
  let wire: PgliteWireServer | null = null;
  let bridge: WebSocketBridge | null = null;
  try {
    if (options.migrate !== false) await database.migrate();

    let workerDatabaseUrl: string;
    let needsBridge = true;
    if (database.kind === "pglite") {
      const client = (database as unknown as { client: PGlite }).client;
      wire = await servePglite(client, { log: options.log });
      workerDatabaseUrl = wire.connectionString;
    } else {
      workerDatabaseUrl = options.databaseUrl!;
      needsBridge = isPostgresUrl(workerDatabaseUrl) && isLoopbackPostgresUrl(workerDatabaseUrl);
    }
    if (needsBridge) bridge = await startWebSocketBridge({ port: options.bridgePort, log: options.log, emulation: options.emulation });

    let closing: Promise<void> | undefined;
    return {
      database,
      workerDatabaseUrl,
      localNeonProxy: bridge?.proxyAddress ?? null,
      bridge,
      close() {
        closing ??= (async () => {
          await bridge?.close();
          await wire?.close();
          await database.close();
        })();
        return closing;
      },
    };
  } catch (error) {
    await bridge?.close().catch(() => {});
    await wire?.close().catch(() => {});
    await database.close().catch(() => {});
    throw error;
  }
}
