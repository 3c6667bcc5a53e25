/**
 * Browser tests: Debian's Chromium (/usr/bin/chromium; `.ci/run` installs it) driven by
 * playwright-core, against the real server process (test/support/server-process.ts) on a
 * database of the test's own: an in-memory PGlite by default, a fresh database on the
 * TEST_DATABASE_URL server otherwise (dropped afterwards). Nothing leaves the machine: the flags
 * turn off Chromium's background networking, component updates and sync.
 */
import { existsSync } from "node:fs";
import pg from "pg";
import { type Browser, chromium } from "playwright-core";

const CHROMIUM_PATH = "/usr/bin/chromium";
const CHROMIUM_FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
];

export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM_PATH)) throw new Error(`${CHROMIUM_PATH} is missing: apt-get install -y chromium (.ci/run does).`);
  return chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: CHROMIUM_FLAGS });
}

/**
 * An empty database for a server process: `memory://` (PGlite inside the server), or a new
 * database on the TEST_DATABASE_URL server, which `drop` removes.
 */
export async function emptyServerDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const serverUrl = process.env.TEST_DATABASE_URL;
  if (!serverUrl) return { url: "memory://", drop: async () => {} };
  const name = `cia_browser_${process.pid}_${Date.now().toString(36)}`;
  const query = async (sql: string) => {
    const client = new pg.Client({ connectionString: serverUrl });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  await query(`create database "${name}"`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => query(`drop database if exists "${name}" with (force)`) };
}
