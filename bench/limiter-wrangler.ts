/**
 * `wrangler dev` processes for the limiter benchmark (bench/limiter-bench.ts): started on this
 * Node (22) as scripts/dev.ts starts it, each in its own process group so that it and its workerd
 * children can be stopped together by group id, and checked gone afterwards.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";
import { workerVarsEnvironment } from "../src/node/wrangler-vars";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const WRANGLER = fileURLToPath(new URL("../node_modules/wrangler/bin/wrangler.js", import.meta.url));
const ANSI = /\u001b\[[0-9;]*[A-Za-z]/g;
/**
 * wrangler's local development tooling that is not part of the Worker and does not exist when it
 * is deployed (wrangler.toml enables no observability): the local trace collector (every
 * invocation, the Worker's and each Durable Object call's, is streamed to a collector worker in
 * the same workerd that writes it to a SQLite-backed object on disk, with an fsync per batch) and
 * the local explorer (wraps SQLite-backed Durable Object classes for inspection). The trace
 * collector weighs on the DO variant more, since each request is two traced invocations there.
 * Both are off unless the variable is set in the environment (X_LOCAL_OBSERVABILITY=true
 * npm run bench:limiter measures with the collector on, as plain `wrangler dev` runs).
 */
export const DEV_TOOLING = {
  X_LOCAL_OBSERVABILITY: process.env.X_LOCAL_OBSERVABILITY ?? "false",
  X_LOCAL_EXPLORER: process.env.X_LOCAL_EXPLORER ?? "false",
};
/** How long wrangler gets to stop workerd after SIGINT before the group is killed. */
const STOP_TIMEOUT_MS = 10_000;

/** A free loopback TCP port (closed again before returning; the usual small race applies). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => (typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port"))));
    });
  });
}

/** Pids of the live processes in process group `pgid` (Linux /proc); with `zombies`, also those that exited but are not reaped yet. */
export function processGroupMembers(pgid: number, zombies = false): { pid: number; command: string }[] {
  const members: { pid: number; command: string }[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      // fields[0] = state, [1] = ppid, [2] = pgrp. Zombies are gone for our purpose.
      if (Number(fields[2]) !== pgid || (fields[0] === "Z" && !zombies)) continue;
      const command = readFileSync(`/proc/${entry}/cmdline`, "utf8").replace(/\0/g, " ").trim();
      members.push({ pid: Number(entry), command });
    } catch {
      // The process ended while we looked.
    }
  }
  return members;
}

/** Clock ticks per second of /proc/<pid>/stat CPU times. */
const CLK_TCK = (() => {
  try {
    return Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/**
 * CPU time (user + system, ms) used so far by the live processes of group `pgid`: workerd, and the
 * rest (wrangler's Node processes); `pids` identifies the process set (it changes when wrangler
 * restarts workerd, e.g. after a source file changed, and the figures are then not comparable).
 */
export function processGroupCpuMs(pgid: number): { workerd: number; wrangler: number; pids: string } {
  const members = processGroupMembers(pgid);
  const total = {
    workerd: 0,
    wrangler: 0,
    pids: members
      .map((m) => m.pid)
      .sort((a, b) => a - b)
      .join(","),
  };
  for (const { pid, command } of members) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      // fields[11] = utime, fields[12] = stime (fields 14 and 15 of proc(5)).
      const ms = ((Number(fields[11]) + Number(fields[12])) * 1000) / CLK_TCK;
      if (/(^|\/)workerd\s/.test(command)) total.workerd += ms;
      else total.wrangler += ms;
    } catch {
      // Gone.
    }
  }
  return total;
}

export type WranglerDev = {
  label: string;
  port: number;
  baseUrl: string;
  /** The inspector's port (Chrome DevTools protocol of the Worker's isolate, on 127.0.0.1). */
  inspectorPort: number;
  /** Process group id (= pid of the wrangler launcher). */
  pgid: number;
  /** The last lines wrangler printed (for error messages). */
  output(): string;
  /** Stops wrangler and its workerd children; resolves with the processes still alive afterwards (normally none). */
  stop(): Promise<{ pid: number; command: string }[]>;
};

/** Every wrangler started by this process and not yet stopped, so a Ctrl-C during startup stops it too. */
export const liveWranglers = new Set<WranglerDev>();

export type StartOptions = {
  label: string;
  /** Entry script overriding wrangler.toml `main`; undefined → `main`. */
  script?: string;
  /**
   * With `edge`, the edge Worker (wrangler.edge.toml) is the primary, in front of the Worker of
   * wrangler.toml, both in one workerd (wrangler dev's multi-worker mode), as `npm run dev` runs them.
   */
  edge?: boolean;
  vars: Record<string, string>;
  persistTo: string;
  /** Passed as --log-level (wrangler's per-request log line costs a loopback call per request at "info"). */
  logLevel?: string;
  readyTimeoutMs?: number;
};

/**
 * Starts `wrangler dev` on a free loopback port and resolves once the Worker answers an HTTP
 * request (a request without credentials → 401, which needs no database).
 */
export async function startWranglerDev(options: StartOptions): Promise<WranglerDev> {
  const port = await freePort();
  const inspectorPort = await freePort();
  const args = [WRANGLER, "dev"];
  if (options.script) args.push(options.script);
  args.push(
    ...(options.edge ? ["--config", "wrangler.edge.toml"] : []),
    "--config",
    "wrangler.toml",
    "--ip",
    "127.0.0.1",
    "--port",
    String(port),
    "--inspector-ip",
    "127.0.0.1",
    "--inspector-port",
    String(inspectorPort),
    "--show-interactive-dev-session=false",
    "--persist-to",
    options.persistTo,
    "--log-level",
    options.logLevel ?? "warn",
  );
  for (const [name, value] of Object.entries(options.vars)) args.push("--var", `${name}:${value}`);

  const child: ChildProcess = spawn(process.execPath, args, {
    cwd: ROOT,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
    env: {
      ...(options.edge ? workerVarsEnvironment(options.vars) : process.env),
      ...DEV_TOOLING,
      WRANGLER_SEND_METRICS: "false",
      CLOUDFLARE_CF_FETCH_ENABLED: "false",
      WRANGLER_HIDE_BANNER: "true",
      NO_COLOR: "1",
    },
  });
  const pgid = child.pid!;
  const tail: string[] = [];
  const collect = (stream: NodeJS.ReadableStream | null) => {
    stream?.setEncoding("utf8");
    stream?.on("data", (text: string) => {
      for (const line of text.replace(ANSI, "").split(/\r?\n/)) if (line.trim() !== "") tail.push(line);
      if (tail.length > 60) tail.splice(0, tail.length - 60);
    });
    stream?.on("error", () => {});
  };
  collect(child.stdout);
  collect(child.stderr);
  let exited = child.exitCode !== null;
  const exitPromise = new Promise<void>((resolve) =>
    child.once("exit", () => {
      exited = true;
      resolve();
    }),
  );

  const baseUrl = `http://127.0.0.1:${port}`;
  let stopping: Promise<{ pid: number; command: string }[]> | null = null;
  const dev: WranglerDev = {
    label: options.label,
    port,
    baseUrl,
    inspectorPort,
    pgid,
    output: () => tail.join("\n"),
    stop() {
      stopping ??= (async () => {
        const signalGroup = (signal: NodeJS.Signals) => {
          try {
            process.kill(-pgid, signal);
          } catch {
            // Group already empty.
          }
        };
        if (processGroupMembers(pgid).length > 0) {
          signalGroup("SIGINT");
          const deadline = Date.now() + STOP_TIMEOUT_MS;
          while (processGroupMembers(pgid).length > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
          if (processGroupMembers(pgid).length > 0) {
            console.error(
              `[limiter-bench] ${options.label}: wrangler did not stop within ${STOP_TIMEOUT_MS / 1000} s; killing its process group ${pgid}.`,
            );
            signalGroup("SIGKILL");
            await new Promise((r) => setTimeout(r, 500));
          }
        }
        if (!exited) await Promise.race([exitPromise, new Promise((r) => setTimeout(r, 2_000))]);
        // workerd outlives wrangler's Node process by a moment and is then reaped by PID 1; wait for that, so nothing is listed afterwards.
        const reapDeadline = Date.now() + 10_000;
        while (processGroupMembers(pgid, true).length > 0 && Date.now() < reapDeadline) await new Promise((r) => setTimeout(r, 100));
        const unreaped = processGroupMembers(pgid, true).length - processGroupMembers(pgid).length;
        if (unreaped > 0)
          console.error(
            `[limiter-bench] ${options.label}: ${unreaped} exited process(es) of group ${pgid} not yet reaped by PID 1 (zombies; they hold no resources)`,
          );
        liveWranglers.delete(dev);
        return processGroupMembers(pgid);
      })();
      return stopping;
    },
  };

  liveWranglers.add(dev);
  const deadline = Date.now() + (options.readyTimeoutMs ?? 90_000);
  while (true) {
    if (exited) {
      await dev.stop();
      throw new Error(`${options.label}: wrangler dev exited during startup:\n${dev.output()}`);
    }
    if (Date.now() > deadline) {
      await dev.stop();
      throw new Error(
        `${options.label}: wrangler dev was not ready within ${(options.readyTimeoutMs ?? 90_000) / 1000} s:\n${dev.output()}`,
      );
    }
    try {
      const response = await fetch(`${baseUrl}/api/v1/projects`, { signal: AbortSignal.timeout(5_000) });
      await response.arrayBuffer();
      if (response.status === 401) return dev;
    } catch {
      // Not listening yet.
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}
