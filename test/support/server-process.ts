/**
 * The real Node server (`src/node/server.ts`), or the Worker under wrangler dev (`npm run dev`,
 * scripts/dev.ts), as a child process, for tests where the process itself is the subject: it must
 * stay up through a database outage, or it is killed with SIGKILL in the middle of a run and
 * another one takes over.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../..", import.meta.url));

export type ServerProcess = {
  child: ChildProcess;
  /** Where it listens (`http://localhost:PORT`). */
  base: string;
  /** Everything it printed so far (stdout and stderr). */
  output(): string;
  /** Waits for `condition`, failing early when the process exits, with its output. */
  until(condition: () => boolean | Promise<boolean>, timeoutMs: number, stepMs?: number): Promise<void>;
  /** SIGTERM, then waits for the exit (SIGKILL to the whole process group after 15 s). */
  stop(): Promise<void>;
  /** An HTTP call with a Bearer token; the body parsed as JSON. */
  call(
    method: string,
    path: string,
    token: string,
    body?: string,
    headers?: Record<string, string>,
  ): Promise<{ status: number; headers: Headers; body: any }>;
};

/** A port nothing listens on now (wrangler dev needs one: it cannot report a port 0 it was given). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/**
 * `runtime: "worker"` runs `npm run dev`'s script: the Worker in workerd, its local queue, the Neon driver through the bridge.
 * `cwd`: another checkout of the repository to run (bench/ingest-compare-bench.ts starts an older commit beside this one).
 */
export async function startServerProcess(
  env: Record<string, string>,
  options: { runtime?: "node" | "worker"; startTimeoutMs?: number; cwd?: string } = {},
): Promise<ServerProcess> {
  const worker = options.runtime === "worker";
  const child = spawn(process.execPath, ["--import", "tsx", worker ? "scripts/dev.ts" : "src/node/server.ts"], {
    cwd: options.cwd ?? root,
    env: { ...process.env, PORT: worker ? String(await freePort()) : "0", SEED_DEMO: "false", ...env },
    stdio: ["ignore", "pipe", "pipe"],
    // Its own process group: wrangler and workerd go with it (see `stop`).
    detached: worker,
  });
  let output = "";
  child.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));

  const until = async (condition: () => boolean | Promise<boolean>, timeoutMs: number, stepMs = 20) => {
    const deadline = Date.now() + timeoutMs;
    while (!(await condition())) {
      if (child.exitCode !== null || child.signalCode !== null)
        throw new Error(`the server exited (${child.exitCode ?? child.signalCode}):\n${output}`);
      if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms; server output:\n${output}`);
      await new Promise((resolve) => setTimeout(resolve, stepMs));
    }
  };
  const listening = /listening on (http:\/\/(?:localhost|127\.0\.0\.1):\d+)/;
  await until(() => listening.test(output), options.startTimeoutMs ?? 60_000);
  const base = listening.exec(output)![1]!;

  const call: ServerProcess["call"] = async (method, path, token, body, headers = {}) => {
    const response = await fetch(`${base}${path}`, { method, headers: { authorization: `Bearer ${token}`, ...headers }, body });
    const text = await response.text();
    return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : undefined };
  };
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    child.kill("SIGTERM");
    const timer = setTimeout(() => {
      try {
        if (worker) process.kill(-child.pid!, "SIGKILL");
        else child.kill("SIGKILL");
      } catch {
        // Gone already.
      }
    }, 15_000);
    await exited;
    clearTimeout(timer);
  };
  return { child, base, output: () => output, until, call, stop };
}
