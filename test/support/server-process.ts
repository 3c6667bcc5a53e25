/**
 * The real Node server (`src/node/server.ts`) as a child process, for tests where the process
 * itself is the subject: it must stay up through a database outage, or it is killed with SIGKILL
 * in the middle of a run and another one takes over.
 */
import { type ChildProcess, spawn } from "node:child_process";
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
  /** An HTTP call with a Bearer token; the body parsed as JSON. */
  call(method: string, path: string, token: string, body?: string, headers?: Record<string, string>): Promise<{ status: number; headers: Headers; body: any }>;
};

export async function startServerProcess(env: Record<string, string>): Promise<ServerProcess> {
  const child = spawn(process.execPath, ["--import", "tsx", "src/node/server.ts"], {
    cwd: root,
    env: { ...process.env, PORT: "0", SEED_DEMO: "false", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));

  const until = async (condition: () => boolean | Promise<boolean>, timeoutMs: number, stepMs = 20) => {
    const deadline = Date.now() + timeoutMs;
    while (!(await condition())) {
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(`the server exited (${child.exitCode ?? child.signalCode}):\n${output}`);
      if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms; server output:\n${output}`);
      await new Promise((resolve) => setTimeout(resolve, stepMs));
    }
  };
  await until(() => /listening on (http:\/\/localhost:\d+)/.test(output), 60_000);
  const base = /listening on (http:\/\/localhost:\d+)/.exec(output)![1]!;

  const call: ServerProcess["call"] = async (method, path, token, body, headers = {}) => {
    const response = await fetch(`${base}${path}`, { method, headers: { authorization: `Bearer ${token}`, ...headers }, body });
    const text = await response.text();
    return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : undefined };
  };
  return { child, base, output: () => output, until, call };
}
