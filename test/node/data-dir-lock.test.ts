/**
 * One process per embedded database directory (src/node/data-dir-lock.ts). Real processes on one
 * temporary data directory (each runs in that directory, where `./.data/pglite` is): a second
 * `npm start` or `npm run dev` stops at start naming the first; two started at once leave exactly
 * one running; a server killed with SIGKILL leaves a stale lock the next start takes over, with
 * the data kept; a clean stop removes the lock. Then the lock's rules in process: live, dead and
 * reused pids, our own pid from an earlier life, a lock file of garbage; and memory:// has none.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { DataDirLockedError, LOCK_FILE_NAME, type LockHolder, lockDataDir } from "../../src/node/data-dir-lock";
import { openDatabase } from "../../src/node/database";
import { WebClient } from "../support/web-client";

const root = fileURLToPath(new URL("../..", import.meta.url));
const tsxPackage = JSON.parse(readFileSync(join(root, "node_modules/tsx/package.json"), "utf8")) as { exports: { ".": string } };
/** tsx's loader by absolute URL: `--import tsx` would be resolved from the temporary directory. */
const tsxLoader = pathToFileURL(join(root, "node_modules/tsx", tsxPackage.exports["."])).href;

const dirs: string[] = [];
const children: ChildProcess[] = [];
afterAll(() => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "cta-data-dir-lock-"));
  dirs.push(dir);
  return dir;
}

type Started = { child: ChildProcess; output(): string; exit: Promise<number | null> };
type Outcome = { ready: true; base: string } | { ready: false; code: number | null };

/** `npm start` (or `npm run dev`'s script) run in `cwd`, so its embedded database is `cwd/.data/pglite`. */
function start(cwd: string, script: "src/node/server.ts" | "scripts/dev.ts" = "src/node/server.ts", port = "0"): Started {
  const child = spawn(process.execPath, ["--import", tsxLoader, join(root, script)], {
    cwd,
    env: {
      ...process.env,
      DATABASE_URL: "",
      PORT: port,
      SEED_DEMO: "false",
      WEB_APP_URL: "",
      PUBLIC_BASE_URL: "",
      TSX_TSCONFIG_PATH: join(root, "tsconfig.json"),
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  let output = "";
  child.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const exit = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return { child, output: () => output, exit };
}

/** Ready (the start banner) or exited, whichever comes first. */
/** Tests that start servers one after another (each a cold tsx start, PGlite's initdb and migrations) on a loaded 2-core machine. */
const SPAWNING_TEST_TIMEOUT_MS = 240_000;

async function outcome(started: Started, timeoutMs = 90_000): Promise<Outcome> {
  const deadline = Date.now() + timeoutMs;
  let exited = false;
  void started.exit.then(() => (exited = true));
  for (;;) {
    const ready = /listening on (http:\/\/localhost:\d+)\/api\/v1/.exec(started.output());
    if (ready) return { ready: true, base: ready[1]! };
    if (exited) return { ready: false, code: await started.exit };
    if (Date.now() > deadline) throw new Error(`neither ready nor exited after ${timeoutMs} ms:\n${started.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function stop(started: Started, signal: NodeJS.Signals = "SIGTERM"): Promise<number | null> {
  started.child.kill(signal);
  return started.exit;
}

/** A process that has exited: its pid is free. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ["-e", ""]);
  await new Promise((resolve) => child.once("exit", resolve));
  return child.pid!;
}

const lockPath = (cwd: string) => join(cwd, ".data/pglite", LOCK_FILE_NAME);
const lockHolder = (cwd: string) => JSON.parse(readFileSync(lockPath(cwd), "utf8")) as LockHolder;
const refusal = (pid: number) =>
  new RegExp(`The embedded database in \\./\\.data/pglite is in use by another process: pid ${pid} \\([^)]*src/node/server\\.ts\\)`);

describe("processes on one data directory", () => {
  it(
    "a second npm start, or npm run dev, stops at start naming the first; the first keeps serving; a clean stop removes the lock",
    async () => {
      const cwd = tempDir();
      const first = start(cwd);
      const ready = await outcome(first);
      if (!ready.ready) throw new Error(`the first server did not start:\n${first.output()}`);
      expect(lockHolder(cwd).pid).toBe(first.child.pid);

      const second = start(cwd);
      expect(await outcome(second)).toEqual({ ready: false, code: 1 });
      expect(second.output()).toMatch(refusal(first.child.pid!));
      const dev = start(cwd, "scripts/dev.ts", "1");
      expect(await outcome(dev)).toEqual({ ready: false, code: 1 });
      expect(dev.output()).toMatch(refusal(first.child.pid!));

      expect((await fetch(`${ready.base}/healthz`)).status).toBe(200);
      expect(lockHolder(cwd).pid).toBe(first.child.pid);
      expect(await stop(first)).toBe(0);
      expect(existsSync(lockPath(cwd))).toBe(false);

      const after = start(cwd);
      expect((await outcome(after)).ready).toBe(true);
      expect(lockHolder(cwd).pid).toBe(after.child.pid);
      await stop(after);
    },
    SPAWNING_TEST_TIMEOUT_MS,
  );

  it.each(["a new data directory", "a data directory with a stale lock"])(
    "two started at once on %s: exactly one runs, the other names it",
    async (kind) => {
      const cwd = tempDir();
      if (kind.includes("stale")) {
        mkdirSync(join(cwd, ".data/pglite"), { recursive: true });
        writeFileSync(
          lockPath(cwd),
          JSON.stringify({
            pid: await deadPid(),
            command: "killed",
            startedAt: "2026-01-01T00:00:00.000Z",
            processStart: null,
            nonce: "stale",
          }),
        );
      }
      const pair = [start(cwd), start(cwd)];
      const outcomes = await Promise.all(pair.map((p) => outcome(p)));
      const winner = outcomes.findIndex((o) => o.ready);
      expect(winner).not.toBe(-1);
      const loser = pair[1 - winner]!;
      expect(outcomes[1 - winner]).toEqual({ ready: false, code: 1 });
      expect(loser.output()).toMatch(refusal(pair[winner]!.child.pid!));
      expect(lockHolder(cwd).pid).toBe(pair[winner]!.child.pid);
      await stop(pair[winner]!);
    },
    SPAWNING_TEST_TIMEOUT_MS,
  );

  it(
    "after kill -9 the lock is stale: the next start takes it over and finds the data",
    async () => {
      const cwd = tempDir();
      const killed = start(cwd);
      const first = await outcome(killed);
      if (!first.ready) throw new Error(killed.output());
      const signUp = await new WebClient({ request: (path, init) => fetch(`${first.base}${path}`, init) }, first.base).signUp({
        name: "Kept Person",
        email: "kept@example.com",
        password: "kept password 1",
        organization: "Kept Org",
      });
      expect(signUp.status).toBe(303);
      await stop(killed, "SIGKILL");
      expect(lockHolder(cwd).pid).toBe(killed.child.pid);

      const next = start(cwd);
      const second = await outcome(next);
      if (!second.ready) throw new Error(next.output());
      expect(lockHolder(cwd).pid).toBe(next.child.pid);
      const signIn = await fetch(`${second.base}/sign-in`, {
        method: "POST",
        redirect: "manual",
        headers: { origin: second.base, "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ email: "kept@example.com", password: "kept password 1" }),
      });
      expect(signIn.status).toBe(303);
      await stop(next);
    },
    SPAWNING_TEST_TIMEOUT_MS,
  );
});

describe("the lock's rules (in process)", () => {
  /** A lock file as another process would have left it. */
  function writeLock(dir: string, holder: Partial<LockHolder>): void {
    const full: LockHolder = {
      pid: 1,
      command: "node elsewhere.ts",
      startedAt: "2026-01-01T00:00:00.000Z",
      processStart: null,
      nonce: "other",
      ...holder,
    };
    writeFileSync(join(dir, LOCK_FILE_NAME), JSON.stringify(full));
  }
  const procStart = (pid: number) => readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")[19]!;
  const hasProc = existsSync("/proc/self/stat");

  /** A process that stays alive until the file's tests end. */
  function livePid(): number {
    const child = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" });
    children.push(child);
    return child.pid!;
  }

  it("a live process's lock is refused with its pid and command; the file is left as it was", () => {
    const dir = tempDir();
    const pid = livePid();
    writeLock(dir, { pid, command: "npm run dev: node scripts/dev.ts", processStart: hasProc ? procStart(pid) : null });
    const before = readFileSync(join(dir, LOCK_FILE_NAME), "utf8");
    expect(() => lockDataDir(dir)).toThrow(DataDirLockedError);
    expect(() => lockDataDir(dir)).toThrow(`in use by another process: pid ${pid} (npm run dev: node scripts/dev.ts)`);
    expect(readFileSync(join(dir, LOCK_FILE_NAME), "utf8")).toBe(before);
  });

  it("a dead pid's lock, our own pid's from an earlier life, and a garbage file are stale: taken over", async () => {
    for (const stale of [{ pid: await deadPid() }, { pid: process.pid, nonce: "an earlier process with this pid" }, null]) {
      const dir = tempDir();
      if (stale) writeLock(dir, stale);
      else writeFileSync(join(dir, LOCK_FILE_NAME), "");
      const lock = lockDataDir(dir);
      const holder = JSON.parse(readFileSync(lock.path, "utf8")) as LockHolder;
      expect(holder.pid).toBe(process.pid);
      expect(holder.nonce).not.toBe("an earlier process with this pid");
      lock.release();
      expect(existsSync(lock.path)).toBe(false);
    }
  });

  it.runIf(hasProc)("a pid now used by another process (its start time differs) is stale", () => {
    const dir = tempDir();
    writeLock(dir, { pid: livePid(), processStart: "1" });
    const lock = lockDataDir(dir);
    expect((JSON.parse(readFileSync(lock.path, "utf8")) as LockHolder).pid).toBe(process.pid);
    lock.release();
  });

  it("this process's own lock is refused a second time; release removes only our own lock", () => {
    const dir = tempDir();
    const lock = lockDataDir(dir);
    expect(() => lockDataDir(dir)).toThrow(`pid ${process.pid}`);
    // Someone replaced the file (by hand): releasing leaves theirs.
    writeLock(dir, { pid: 1, nonce: "theirs" });
    lock.release();
    expect((JSON.parse(readFileSync(lock.path, "utf8")) as LockHolder).nonce).toBe("theirs");
  });

  it("openDatabase locks its directory until closed; a failed open lets go; memory:// takes no lock", async () => {
    const dir = join(tempDir(), "pglite");
    const first = await openDatabase(undefined, { dataDir: dir });
    await expect(openDatabase(undefined, { dataDir: dir })).rejects.toThrow(DataDirLockedError);
    await first.close();
    expect(existsSync(join(dir, LOCK_FILE_NAME))).toBe(false);
    const again = await openDatabase(undefined, { dataDir: dir });
    await again.close();

    const broken = join(tempDir(), "pglite");
    mkdirSync(broken);
    writeFileSync(join(broken, "PG_VERSION"), "not a database\n");
    await expect(openDatabase(undefined, { dataDir: broken })).rejects.toThrow();
    expect(existsSync(join(broken, LOCK_FILE_NAME))).toBe(false);

    const memories = await Promise.all([openDatabase("memory://"), openDatabase("memory://")]);
    for (const memory of memories) await memory.close();
  });
});
