/**
 * Test files whose subject does not depend on the database: pure functions (the checks, the
 * parsers, the libraries), the build and generated files, the CLI against its own fake servers,
 * the /docs page (a static page, although its server process opens a database), and the files
 * whose servers always run on an embedded database of their own (memory://).
 *
 * The Node suite runs them on its PGlite pass only: on the PostgreSQL pass (TEST_DATABASE_URL)
 * they would test the same code again and add nothing but time. A file that reads or writes the
 * database through the service does not belong here.
 */
export const DATABASE_INDEPENDENT_TESTS = [
  "test/lib/**/*.test.ts",
  "test/checks/**/*.test.ts",
  "test/notifications/**/*.test.ts",
  "test/ingest/**/*.test.ts",
  "test/build/**/*.test.ts",
  "test/scripts/**/*.test.ts",
  "test/bench/**/*.test.ts",
  "test/simulator/streams.test.ts",
  "test/node/config.test.ts",
  "test/node/secrets-key.test.ts",
  "test/node/wire-meter.test.ts",
  "test/node/outbound-fetch.test.ts",
  "test/node/in-process-run-queue.test.ts",
  "test/web/page-paths.test.ts",
  "test/web/upload-commands.test.ts",
  "test/cli/action.test.ts",
  "test/cli/base-url.test.ts",
  "test/cli/bundle.test.ts",
  "test/cli/codeowners-cli.test.ts",
  "test/cli/quarantine-cli.test.ts",
  "test/cli/upload-cli.test.ts",
  "test/routes/docs-page.browser.test.ts",
  // Servers started on their own embedded database (memory://) whatever the pass.
  "test/node/server.test.ts",
  "test/node/http-server.test.ts",
  "test/node/data-dir-lock.test.ts",
  "test/cli/quarantine-e2e.test.ts",
  "test/cli/uploader-commands-e2e.test.ts",
];
