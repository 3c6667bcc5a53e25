/** Settings and helpers shared by the benchmark scripts. */
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import pg from "pg";
import { type OpenedDatabase, openDatabase } from "../src/node/database";

/** Quota high enough never to throttle the benchmark; the real in-memory key counter (rate limiter) still runs on every request. */
export const BENCH_RATE_LIMIT = { limit: 1e9, windowMs: 60_000 };

/**
 * Writes one benchmark's section of BENCHMARKS.md between its markers
 * (`<!-- name:start -->` … `<!-- name:end -->`), leaving every other section as it is.
 */
export function writeBenchmarkSection(file: string, name: string, body: string): void {
  const start = `<!-- ${name}:start -->`;
  const end = `<!-- ${name}:end -->`;
  const section = `${start}\n${body}\n${end}`;
  if (!existsSync(file)) {
    writeFileSync(
      file,
      `# Benchmarks\n\nResults of the project's benchmarks. Each benchmark script rewrites only its own section (between its markers).\n\n${section}\n`,
    );
    return;
  }
  const current = readFileSync(file, "utf8");
  const from = current.indexOf(start);
  const to = current.indexOf(end);
  if (from !== -1 && to > from) writeFileSync(file, current.slice(0, from) + section + current.slice(to + end.length));
  else writeFileSync(file, `${current.replace(/\s*$/, "")}\n\n${section}\n`);
}

/**
 * Runs `fn` on a database made for it on the local Postgres server (migrated), and drops the
 * database afterwards, whatever happens. `postgres` is the server's version line for the report;
 * `url` the made database's, for a child process to open.
 */
export async function withBenchDatabase<T>(
  serverUrl: string,
  prefix: string,
  fn: (database: OpenedDatabase, postgres: string, url: string) => Promise<T>,
): Promise<T> {
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  const dbName = `${prefix}_${randomBytes(5).toString("hex")}`;
  await admin.query(`create database "${dbName}"`);
  const url = new URL(serverUrl);
  url.pathname = `/${dbName}`;
  const database = await openDatabase(url.toString());
  try {
    await database.migrate();
    const postgres = (await admin.query<{ v: string }>("select version() as v")).rows[0]!.v.replace(/ on .*$/, "");
    return await fn(database, postgres, url.toString());
  } finally {
    await database.close();
    await admin.query(`drop database if exists "${dbName}" with (force)`);
    await admin.end();
  }
}
