import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";
import { DATABASE_INDEPENDENT_TESTS } from "./support/database-independent";

/**
 * Node-side suite: the whole contract against PGlite (default) or a real Postgres when
 * TEST_DATABASE_URL is set. The global setup prepares one migrated database per run.
 *
 * `*.postgres.test.ts` files test what only a Postgres server can do (go away and come back):
 * they are collected only when TEST_DATABASE_URL is set, so on PGlite they are neither run nor
 * reported as skipped. CI runs the suite on both. The files whose subject does not depend on the
 * database (support/database-independent.ts) run on the PGlite pass only.
 */
const onPostgres = Boolean(process.env.TEST_DATABASE_URL);
const notThisPass = onPostgres ? DATABASE_INDEPENDENT_TESTS : ["test/**/*.postgres.test.ts"];

export default defineConfig({
  test: {
    root: fileURLToPath(new URL("..", import.meta.url)),
    include: ["test/**/*.test.ts"],
    exclude: ["test/worker/**", "node_modules/**", ...notThisPass],
    globalSetup: ["test/support/global-setup.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: "forks",
  },
});
