import { fileURLToPath } from "node:url";
import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";
import { ADMIN_TOKEN, CURSOR_SECRET, PUBLIC_BASE_URL, SECRETS_KEY, WEB_APP_URL } from "./test/support/constants.ts";
import {
  BROWSER_TESTS,
  CONTRACT_TESTS,
  DATABASE_INDEPENDENT_TESTS,
  POSTGRES_ONLY_TESTS,
  SLOW_TESTS,
  UNIT_TESTS,
  WORKER_OWN_TESTS,
} from "./test/support/tiers.ts";

/**
 * The test tiers, one Vitest project each (`vitest run --project NAME`; test/support/tiers.ts says
 * which file is in which, docs/contributing.md how long each takes):
 *
 *   npm test            unit, node (PGlite), workerd (PGlite), browser; prints the count per tier
 *                       (scripts/test-tiers.ts: workerd in a Vitest process of its own beside the others)
 *   npm run test:slow   slow and slow-workerd: the files that alone take more than 30 s (with
 *                       TEST_DATABASE_URL, those that depend on the database, and the outage and kill files)
 *   npm run test:pg     node and browser on Postgres (TEST_DATABASE_URL, default the local server),
 *                       and the Worker's own files in workerd through the Neon driver to it
 *
 * With TEST_DATABASE_URL set the node tier drops the files whose subject does not depend on the
 * database (they ran on PGlite) and gains `*.postgres.test.ts`; the workerd tier keeps the Worker's
 * own files (the contract files ran in workerd on PGlite, and on Postgres in the node tier).
 */
const root = fileURLToPath(new URL(".", import.meta.url));
const onPostgres = Boolean(process.env.TEST_DATABASE_URL);
const postgresOnly = onPostgres ? [] : POSTGRES_ONLY_TESTS;
const cores = 2;

export default defineConfig({
  test: {
    root,
    reporters: ["default", "./test/support/tier-counts-reporter.ts"],
    projects: [
      {
        extends: true,
        test: {
          name: "unit",
          include: UNIT_TESTS,
          pool: "threads",
          // Pure modules: sharing them between files changes nothing but the import time.
          isolate: false,
          maxWorkers: cores,
          testTimeout: 60_000,
        },
      },
      {
        extends: true,
        test: {
          name: "node",
          include: ["test/**/*.test.ts"],
          exclude: [
            ...WORKER_OWN_TESTS,
            ...UNIT_TESTS,
            ...BROWSER_TESTS,
            ...SLOW_TESTS,
            ...postgresOnly,
            ...(onPostgres ? DATABASE_INDEPENDENT_TESTS : []),
          ],
          globalSetup: ["test/support/global-setup.ts"],
          pool: "forks",
          // One migrated database per worker (test/support/harness.ts), and the app imported once per worker.
          isolate: false,
          maxWorkers: cores,
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
      {
        extends: true,
        test: {
          name: "browser",
          include: BROWSER_TESTS,
          exclude: onPostgres ? DATABASE_INDEPENDENT_TESTS : [],
          pool: "forks",
          maxWorkers: cores,
          testTimeout: 60_000,
          hookTimeout: 240_000,
        },
      },
      {
        extends: true,
        test: {
          name: "slow",
          include: SLOW_TESTS,
          exclude: [...postgresOnly, ...(onPostgres ? DATABASE_INDEPENDENT_TESTS : [])],
          globalSetup: ["test/support/global-setup.ts"],
          pool: "forks",
          // One at a time: each file has a database of its own (its process's), but the outage files' timing does not
          // survive a neighbour: beside the 500,000-case file, the Worker's outage test took 134 s and a run ran out of
          // its queue attempts (23 s alone). docs/contributing.md, "The slow tier".
          maxWorkers: 1,
          // Vitest runs projects of different worker counts in separate groups, one group after the other.
          sequence: { groupOrder: 1 },
          testTimeout: 120_000,
          hookTimeout: 240_000,
        },
      },
      workerdProject({
        name: "workerd",
        include: onPostgres ? WORKER_OWN_TESTS : [...WORKER_OWN_TESTS, ...CONTRACT_TESTS],
        exclude: [...BROWSER_TESTS, ...SLOW_TESTS],
        // npm test runs this tier in a Vitest process of its own beside the others (scripts/test-tiers.ts); a plain
        // `vitest run` runs it in a group of its own after them.
        groupOrder: 2,
      }),
      // The slow tier's files that ran in workerd before they were slow (the contract files: on PGlite only).
      workerdProject({
        name: "slow-workerd",
        include: SLOW_TESTS.filter((file) => file.startsWith("test/routes/") || file.startsWith("test/worker/")),
        exclude: onPostgres ? CONTRACT_TESTS : [],
        groupOrder: 3,
      }),
    ],
  },
});

/** A project whose files run inside workerd, against the Worker of wrangler.toml. */
function workerdProject(options: { name: string; include: string[]; exclude: string[]; groupOrder: number }) {
  return {
    extends: true,
    plugins: [
      cloudflareTest(({ inject }) => ({
        wrangler: { configPath: "./wrangler.toml" },
        // The deployed entry composed with the tests' clock and rate policy.
        main: "./test/worker/support/worker-entry.ts",
        miniflare: {
          bindings: {
            DATABASE_URL: inject("databaseUrl"),
            LOCAL_NEON_PROXY: inject("localNeonProxy"),
            CURSOR_SECRET,
            SECRETS_KEY,
            ADMIN_TOKEN,
            PUBLIC_BASE_URL,
            WEB_APP_URL,
            // The suites' webhook receivers are on loopback, which the outbound policy refuses unless the operator allows it.
            OUTBOUND_ALLOW_HOSTS: "127.0.0.1,localhost",
          },
        },
      })),
    ],
    resolve: {
      // The contract files' `support/harness` import resolves to the workerd harness (requests through SELF.fetch).
      alias: [
        { find: /^(\.\.\/)+support\/harness$/, replacement: fileURLToPath(new URL("./test/worker/support/harness.ts", import.meta.url)) },
      ],
    },
    test: {
      name: options.name,
      include: options.include,
      exclude: options.exclude,
      globalSetup: ["test/worker/global-setup.ts"],
      setupFiles: ["test/worker/support/per-file.ts"],
      isolate: false,
      // One worker: every statement goes through one PGlite behind the serialising gate, so a second file would only wait.
      maxWorkers: 1,
      sequence: { groupOrder: options.groupOrder },
      // Generous: some files send hundreds of requests through workerd, slow on a loaded 2-core machine.
      testTimeout: 180_000,
      hookTimeout: 120_000,
    },
  };
}
