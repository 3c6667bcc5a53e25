/**
 * `npm run dev`: the Worker under `wrangler dev` on 127.0.0.1, against the same database `npm start`
 * uses (PORT, ADMIN_TOKEN, CURSOR_SECRET, SECRETS_KEY, PUBLIC_BASE_URL, WEB_APP_URL, DATABASE_URL incl. memory://, SEED_DEMO).
 *
 * Node side (this process): open + migrate the database, serve an embedded PGlite over the wire
 * protocol, start the WebSocket bridge the Neon driver inside workerd connects through, seed the
 * demo organization on an empty database. Then wrangler dev runs as a child on this Node (22),
 * both Workers in one workerd (the edge Worker on the port, in front of the placed Worker; docs/edge-path.md),
 * with the bindings passed in its environment, telemetry, the update check and the Request.cf download off.
 * Everything stops on SIGINT/SIGTERM, or when wrangler exits.
 *
 * The bridge counts round trips and statements and can emulate the network between the Worker and
 * the database (docs/edge-path.md): BRIDGE_RTT_MS (default 0: no delay), BRIDGE_HANDSHAKE_RTTS
 * (default 3: TCP, TLS 1.3, WebSocket upgrade), BRIDGE_PORT (default: any free port). Its counters
 * and emulation are at http://127.0.0.1:BRIDGE_PORT/__bridge/counters and /__bridge/emulation.
 */
import { printStartBanner } from "../src/node/start-banner";
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { consoleLogger } from "../src/lib/logger";
import { publicUrls, readNodeConfig } from "../src/node/config";
import { type LocalDatabase, parseEmulation, startLocalDatabase } from "../src/node/local-neon";
import { prepareDatabase } from "../src/node/prepare-database";
import { workerVarsEnvironment } from "../src/node/wrangler-vars";
import { openSecretsKeyring, secretsKeyNotice } from "../src/node/secrets-key";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const WRANGLER = fileURLToPath(new URL("../node_modules/wrangler/bin/wrangler.js", import.meta.url));
/** How long wrangler gets to stop workerd after SIGINT before it is killed. */
const STOP_TIMEOUT_MS = 10_000;

const ANSI = /\u001b\[[0-9;]*[A-Za-z]/g;

/**
 * The pid of our parent's parent (Linux /proc), or null. Under `npm run dev` the chain is
 * npm → sh → tsx → this process, and a SIGTERM to npm kills sh without reaching tsx or us.
 */
function grandparentPid(): number | null {
  try {
    const stat = readFileSync(`/proc/${process.ppid}/stat`, "utf8");
    const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    return Number.isInteger(ppid) && ppid > 1 ? ppid : null;
  } catch {
    return null;
  }
}

/** Calls `onGone` once the process that launched us (npm's shell) is gone, so wrangler is never orphaned. */
function watchLauncher(onGone: () => void): void {
  const launcher = grandparentPid();
  if (launcher === null) return;
  const timer = setInterval(() => {
    try {
      process.kill(launcher, 0);
    } catch {
      clearInterval(timer);
      onGone();
    }
  }, 1_000);
  timer.unref();
}

/** Calls `onLine` for each complete line of a stream, forwarding the raw text to `sink`. */
function forwardLines(stream: NodeJS.ReadableStream, sink: NodeJS.WriteStream, onLine: (line: string) => void): void {
  let partial = "";
  stream.setEncoding("utf8");
  stream.on("data", (text: string) => {
    sink.write(text);
    const lines = (partial + text).split(/\r?\n/);
    partial = lines.pop() ?? "";
    for (const line of lines) onLine(line.replace(ANSI, ""));
  });
  stream.on("error", () => {});
}

/** BRIDGE_PORT, when set: the bridge's port on 127.0.0.1. */
function bridgePort(raw: string | undefined): number | undefined {
  if (raw === undefined || raw === "") return undefined;
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`BRIDGE_PORT must be a port number, got ${JSON.stringify(raw)}`);
  return port;
}

/** ", emulating 150 ms RTT …" when the bridge delays, else nothing. */
function emulationNote(local: LocalDatabase): string {
  const emulation = local.bridge?.emulation();
  if (!emulation || emulation.rttMs === 0) return "";
  return `, emulating ${emulation.rttMs} ms RTT and ${emulation.handshakeRtts} handshake round trips per connection`;
}

/** Set once shutdown began; startup failures after that are part of the shutdown, not errors. */
let stopping: Promise<void> | null = null;

async function main(): Promise<void> {
  const startedAt = Date.now();
  const config = readNodeConfig();
  // wrangler dev listens on the configured port (PORT=0 is not known here, so the default base then says 0).
  const urls = publicUrls(config, config.port);
  let local: LocalDatabase | null = null;
  let wrangler: ChildProcess | null = null;

  /** Opening, migrating and seeding the database; a shutdown waits for it (a half-written seed would stay). */
  const startup = (async () => {
    local = await startLocalDatabase({
      databaseUrl: config.databaseUrl,
      bridgePort: bridgePort(process.env.BRIDGE_PORT),
      emulation: parseEmulation({ rttMs: process.env.BRIDGE_RTT_MS, handshakeRtts: process.env.BRIDGE_HANDSHAKE_RTTS }),
    });
    const db = local.database.db;
    // The same key as `npm start` (SECRETS_KEY, else ./.data/secrets-key), handed to the Worker as its binding.
    const secretsKeyring = openSecretsKeyring(config);
    const { cursorSecret, demoKey, demoPeople } = await prepareDatabase(
      db,
      { ...config, webAppUrl: urls.webAppUrl },
      secretsKeyring.secrets,
    );
    return { local, cursorSecret, demoKey, demoPeople, secretsKeyring };
  })();

  const stop = (exitCode: number): Promise<void> => {
    stopping ??= (async () => {
      const child = wrangler;
      if (child && child.exitCode === null && child.signalCode === null) {
        const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
        child.kill("SIGINT");
        const timer = setTimeout(() => {
          console.error(`wrangler did not stop within ${STOP_TIMEOUT_MS / 1000} s; killing it.`);
          child.kill("SIGKILL");
        }, STOP_TIMEOUT_MS);
        await exited;
        clearTimeout(timer);
      }
      await startup.catch(() => {});
      await (local as LocalDatabase | null)
        ?.close()
        .catch((error: unknown) => consoleLogger.error("closing the database failed", { error: String(error) }));
      process.exit(exitCode);
    })();
    return stopping;
  };
  process.on("SIGINT", () => void stop(0));
  process.on("SIGTERM", () => void stop(0));
  process.on("SIGHUP", () => void stop(0));
  watchLauncher(() => {
    console.error("npm run dev was stopped; shutting down.");
    void stop(0);
  });

  const { local: started, cursorSecret, demoKey, demoPeople, secretsKeyring } = await startup;
  if (stopping) return;
  const database = started.database;

  const vars: Record<string, string> = {
    DATABASE_URL: started.workerDatabaseUrl,
    CURSOR_SECRET: cursorSecret,
    SECRETS_KEY: secretsKeyring.keys.current,
    PUBLIC_BASE_URL: urls.publicBaseUrl,
    WEB_APP_URL: urls.webAppUrl,
  };
  if (secretsKeyring.keys.previous.length > 0) vars.SECRETS_KEY_PREVIOUS = secretsKeyring.keys.previous.join(",");
  if (started.localNeonProxy) vars.LOCAL_NEON_PROXY = started.localNeonProxy;
  else console.warn("DATABASE_URL is not on this machine: the Worker connects to it directly, as in production (a Neon endpoint).");
  if (config.adminToken) vars.ADMIN_TOKEN = config.adminToken;
  // The outbound policy as `npm start` reads it (docs/outbound-policy.md): a local webhook receiver needs OUTBOUND_ALLOW_HOSTS.
  for (const name of ["OUTBOUND_ALLOW_HOSTS", "WEBHOOKS_PER_ORGANIZATION", "WEBHOOK_DELIVERIES_PER_MINUTE"] as const) {
    if (process.env[name]) vars[name] = process.env[name];
  }
  // wrangler.toml's upload limit (what the Worker processes within 128 MB), raised or lowered for a local run.
  if (process.env.UPLOAD_LIMIT_BYTES) vars.UPLOAD_LIMIT_BYTES = process.env.UPLOAD_LIMIT_BYTES;
  if (config.host && config.host !== "127.0.0.1" && config.host !== "localhost")
    console.warn(`HOST=${config.host} is ignored: npm run dev listens on 127.0.0.1 only.`);

  // Both Workers in one workerd: the edge Worker (the first config, on the port) in front of the placed one (docs/edge-path.md).
  const args = [
    WRANGLER,
    "dev",
    "--config",
    "wrangler.edge.toml",
    "--config",
    "wrangler.toml",
    "--ip",
    "127.0.0.1",
    "--port",
    String(config.port),
    "--inspector-ip",
    "127.0.0.1",
    "--show-interactive-dev-session=false",
  ];

  wrangler = spawn(process.execPath, args, {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "pipe"],
    env: {
      // The placed Worker's bindings: wrangler passes --var to the first Worker only (src/node/wrangler-vars.ts).
      ...workerVarsEnvironment(vars),
      WRANGLER_SEND_METRICS: "false",
      CLOUDFLARE_CF_FETCH_ENABLED: "false",
      WRANGLER_HIDE_BANNER: "true",
      // Colours only when our own output is a terminal (wrangler sees pipes).
      ...(process.stdout.isTTY && !process.env.NO_COLOR ? { FORCE_COLOR: process.env.FORCE_COLOR ?? "1" } : {}),
    },
  });

  let ready = false;
  const onLine = (line: string) => {
    const match = /Ready on (https?:\/\/[^\s]+)/.exec(line);
    if (!match || ready) return;
    ready = true;
    const base = match[1]!.replace(/\/$/, "");
    console.log("");
    printStartBanner({
      base,
      webAppUrl: vars.WEB_APP_URL ?? base,
      databaseDescription: database.description,
      runtimeLine: `Worker running in wrangler dev (workerd, Neon driver via ${vars.LOCAL_NEON_PROXY ?? "its default proxy"}${emulationNote(started)}); ready in ${((Date.now() - startedAt) / 1000).toFixed(1)} s.`,
      adminEnabled: Boolean(config.adminToken),
      secretsKeyNotice: secretsKeyNotice(secretsKeyring.source, config.databaseUrl),
      demoKey,
      demoPeople,
      seedDemo: config.seedDemo,
    });
  };
  forwardLines(wrangler.stdout!, process.stdout, onLine);
  forwardLines(wrangler.stderr!, process.stderr, onLine);

  wrangler.on("error", (error) => {
    consoleLogger.error("could not start wrangler", { error: error.message });
    void stop(1);
  });
  wrangler.on("exit", (code, signal) => {
    if (stopping) return;
    if (code !== 0) console.error(`wrangler exited (${signal ?? `code ${code}`}).`);
    void stop(code ?? 1);
  });
}

main().catch(async (error) => {
  if (stopping) return stopping;
  consoleLogger.error("failed to start", { error: error instanceof Error ? error.message : String(error) });
  process.exit(1);
});
