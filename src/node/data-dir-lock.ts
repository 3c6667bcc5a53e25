/**
 * One process per embedded database directory (README, "Configuration"). PGlite is Postgres in
 * one process, without the postmaster's lock: two processes opening one data directory (`npm
 * start` and `npm run dev`, say) each write it through their own cache, both number a project's
 * next run #21, and after a restart one process's writes are gone. So the directory holds a lock
 * file naming its process, taken before PGlite opens the directory and removed when it is closed.
 *
 * - Taking it is atomic: the holder's description is written to a file of our own, which is then
 *   hard-linked to the lock's name; the link fails if the lock exists, so of two processes
 *   starting at once exactly one gets it, and a reader never sees a half-written lock.
 * - A lock whose process is gone (killed with SIGKILL, a power cut) is stale and taken over: its
 *   pid is no longer alive, or is now another process (Linux: a different start time; or our own
 *   pid, which a restarted container often gets again). The stale file is moved aside before it
 *   is removed, and checked to be the one judged stale, so two processes taking over one stale
 *   lock cannot both win.
 */
import { randomUUID } from "node:crypto";
import { linkSync, readFileSync, renameSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export const LOCK_FILE_NAME = "ci-test-analytics.lock";
/** Rounds of "find a stale lock, remove it, try again" before giving up. */
const TAKE_ATTEMPTS = 5;

/** What a lock file says about its process. */
export type LockHolder = {
  pid: number;
  /** How it was started: `npm start`, `npm run dev`, or its command line. */
  command: string;
  startedAt: string;
  /** Linux: the process's start time (clock ticks since boot, /proc/<pid>/stat), to tell a reused pid. */
  processStart: string | null;
  /** This lock's own id: two locks of one pid are still told apart. */
  nonce: string;
};

export type DataDirLock = {
  readonly path: string;
  /** Removes the lock file if it is still ours; safe to call more than once. */
  release(): void;
};

/** Refusal to open a data directory another live process has open. */
export class DataDirLockedError extends Error {
  constructor(
    readonly dataDir: string,
    readonly lockPath: string,
    readonly holder: LockHolder,
  ) {
    super(
      `The embedded database in ${dataDir} is in use by another process: pid ${holder.pid} (${holder.command}), running since ${holder.startedAt}. ` +
        "Two processes must never write one embedded database (each would lose the other's writes): stop that process first, " +
        `or give this one another database (DATABASE_URL=postgres://… or memory://). If no such process runs, delete ${lockPath}.`,
    );
    this.name = "DataDirLockedError";
  }
}

/** Nonces of the locks this process holds: its own pid in a lock is alive only for these. */
const heldHere = new Set<string>();

/** The process's start time from /proc (Linux), else null. */
function processStartTime(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command's closing parenthesis start at field 3 (state); starttime is field 22.
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19] ?? null;
  } catch {
    return null;
  }
}

function describeCommand(): string {
  const event = process.env.npm_lifecycle_event;
  const npm = event === "start" ? "npm start" : event ? `npm run ${event}` : null;
  const line = process.argv.join(" ").slice(0, 300);
  return npm ? `${npm}: ${line}` : line;
}

/** Whether the lock's process still runs (and is the same process, not a later one with its pid). */
function isAlive(holder: LockHolder): boolean {
  if (holder.pid === process.pid) return heldHere.has(holder.nonce);
  try {
    process.kill(holder.pid, 0);
  } catch (error) {
    // EPERM: the process exists, under another user.
    if ((error as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  const now = processStartTime(holder.pid);
  return holder.processStart === null || now === null || now === holder.processStart;
}

function parseHolder(text: string): LockHolder | null {
  try {
    const value = JSON.parse(text) as Partial<LockHolder>;
    if (!Number.isInteger(value.pid) || (value.pid as number) <= 0 || typeof value.nonce !== "string") return null;
    return {
      pid: value.pid!,
      command: String(value.command ?? "unknown"),
      startedAt: String(value.startedAt ?? "unknown"),
      processStart: value.processStart ?? null,
      nonce: value.nonce,
    };
  } catch {
    return null;
  }
}

const readText = (path: string): string | null => {
  try {
    return readFileSync(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw error;
  }
};

/** Links a complete lock file into place; false when a lock is there already. */
function tryCreate(lockPath: string, content: string): boolean {
  const own = `${lockPath}.${process.pid}.${randomUUID()}.tmp`;
  writeFileSync(own, content, { flag: "wx", mode: 0o644 });
  try {
    linkSync(own, lockPath);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw error;
  } finally {
    unlinkSync(own);
  }
}

/**
 * Removes the stale lock whose text was `staleText`. Moved aside first (rename is atomic): if what
 * was moved is not that text, another process replaced the stale lock meanwhile and the move took
 * its live lock, which is put back.
 */
function removeStale(lockPath: string, staleText: string): void {
  const aside = `${lockPath}.${process.pid}.${randomUUID()}.stale`;
  try {
    renameSync(lockPath, aside);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
    throw error;
  }
  try {
    if (readText(aside) !== staleText) linkSync(aside, lockPath);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  } finally {
    unlinkSync(aside);
  }
}

/**
 * Takes the lock of `dataDir` (which must exist) for this process, taking over a stale one, or
 * throws DataDirLockedError naming the live process that holds it.
 */
export function lockDataDir(dataDir: string): DataDirLock {
  const path = join(dataDir, LOCK_FILE_NAME);
  const me: LockHolder = {
    pid: process.pid,
    command: describeCommand(),
    startedAt: new Date().toISOString(),
    processStart: processStartTime(process.pid),
    nonce: randomUUID(),
  };
  for (let attempt = 0; attempt < TAKE_ATTEMPTS; attempt++) {
    if (tryCreate(path, `${JSON.stringify(me)}\n`)) return held(path, me.nonce);
    const text = readText(path);
    if (text === null) continue;
    const holder = parseHolder(text);
    if (holder && isAlive(holder)) throw new DataDirLockedError(dataDir, path, holder);
    // Unreadable content is stale too: the link makes a complete file, so only a crash leaves that.
    removeStale(path, text);
  }
  throw new Error(
    `Could not lock the embedded database in ${dataDir}: its lock file ${path} kept changing. Is another process starting on it?`,
  );
}

function held(path: string, nonce: string): DataDirLock {
  heldHere.add(nonce);
  const release = () => {
    if (!heldHere.delete(nonce)) return;
    process.removeListener("exit", release);
    try {
      if (parseHolder(readText(path) ?? "")?.nonce === nonce) unlinkSync(path);
    } catch {
      // Already gone, or the directory went away: nothing is held any more.
    }
  };
  // A process ending without closing the database (process.exit after a failure) lets go too.
  process.on("exit", release);
  return { path, release };
}
