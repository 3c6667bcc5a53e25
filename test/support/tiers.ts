/**
 * Which tier each test file belongs to (vitest.config.ts builds one Vitest project per tier;
 * docs/contributing.md says how to pick one). No imports: the config loads this file.
 *
 * - unit: pure functions (parsers, checks, statistics, CODEOWNERS, signatures, the CLI's commands
 *   in process, build outputs): no database, no app, no spawned server.
 * - node: the app and the services on a real database (PGlite, or Postgres with TEST_DATABASE_URL),
 *   plus the files that spawn the server or the uploader. Everything not listed elsewhere.
 * - workerd: the contract files under test/routes and the Worker's own files under test/worker.
 * - browser: Chromium against a server process (`*.browser.test.ts`).
 * - slow: a file that alone takes more than 30 s (docs/contributing.md lists them with their time).
 */
export const UNIT_TESTS = [
  "test/lib/**/*.test.ts",
  "test/checks/**/*.test.ts",
  "test/ingest/**/*.test.ts",
  "test/notifications/**/*.test.ts",
  "test/build/**/*.test.ts",
  "test/bench/**/*.test.ts",
  "test/simulator/streams.test.ts",
  "test/simulator/verdict-streams.test.ts",
  "test/node/config.test.ts",
  "test/node/wire-meter.test.ts",
  "test/node/outbound-fetch.test.ts",
  "test/node/in-process-run-queue.test.ts",
  "test/web/page-paths.test.ts",
  "test/web/upload-commands.test.ts",
  "test/web/alert-sentences.test.ts",
  "test/cli/bundle.test.ts",
  "test/cli/codeowners-cli.test.ts",
  "test/cli/quarantine-cli.test.ts",
  "test/cli/ci-detection.test.ts",
  "test/cli/test-files.test.ts",
  "test/cli/workspace-paths.test.ts",
];

export const BROWSER_TESTS = ["test/**/*.browser.test.ts"];

/**
 * Each alone takes more than 30 s on a 2-core machine (the `*.postgres.test.ts` ones run with
 * TEST_DATABASE_URL only). A file under test/routes also runs in workerd (the slow-workerd project).
 */
export const SLOW_TESTS = [
  "test/node/data-dir-lock.test.ts",
  "test/routes/uploads/hostile-large.security.test.ts",
  "test/services/alerts/alert-checks-chunked.test.ts",
  "test/services/alerts/alert-checks-sliced.test.ts",
  "test/node/database-outage.postgres.test.ts",
  "test/node/killed-during-processing.postgres.test.ts",
  "test/node/killed-during-sliced-processing.test.ts",
  "test/node/worker-database-outage.postgres.test.ts",
  "test/node/scale-out.postgres.test.ts",
  "test/node/huge-upload.postgres.test.ts",
];

/** What only a Postgres server can show (it goes away and comes back): collected only with TEST_DATABASE_URL. */
export const POSTGRES_ONLY_TESTS = ["test/**/*.postgres.test.ts"];

/** The Worker's own files; the contract files under test/routes run in workerd too, on PGlite. */
export const WORKER_OWN_TESTS = ["test/worker/**/*.test.ts"];
export const CONTRACT_TESTS = ["test/routes/**/*.test.ts"];

/**
 * Node-side files whose subject does not depend on the database, beyond the unit tier: the CLI
 * against its own fake servers, the build and generated files, the /docs page, and servers that
 * always run on an embedded database of their own (memory://). The node and browser tiers leave
 * them out of their Postgres pass (TEST_DATABASE_URL): they would test the same code again and add
 * nothing but time. A file that reads or writes the database through the service does not belong here.
 */
export const DATABASE_INDEPENDENT_TESTS = [
  "test/scripts/**/*.test.ts",
  "test/node/secrets-key.test.ts",
  "test/cli/action.test.ts",
  "test/cli/base-url.test.ts",
  "test/cli/upload-cli.test.ts",
  "test/cli/base-commit.test.ts",
  "test/cli/checkout-git.test.ts",
  // Servers started on their own embedded database (memory://) whatever the pass.
  "test/node/server.test.ts",
  "test/node/http-server.test.ts",
  "test/node/trusted-proxies.test.ts",
  "test/cli/quarantine-e2e.test.ts",
  "test/cli/uploader-commands-e2e.test.ts",
  "test/cli/verdicts-e2e.test.ts",
  "test/cli/run-key-e2e.test.ts",
  "test/cli/test-files-e2e.test.ts",
  // Server processes on an embedded database of their own, racing for its data directory.
  "test/node/data-dir-lock.test.ts",
  // A server process on an embedded database of its own, killed mid-run (SIGKILL) and started again.
  "test/node/killed-during-sliced-processing.test.ts",
  // A migration run on an embedded database of its own (memory://), from the migration before it.
  "test/db/stored-cases-backfill.test.ts",
  "test/db/accounts-migration.test.ts",
  // A static page, although its server process opens a database (memory://).
  "test/routes/docs-page.browser.test.ts",
];
