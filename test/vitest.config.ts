import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

/**
 * Node-side suite: the whole contract against PGlite (default) or a real Postgres when
 * TEST_DATABASE_URL is set. The global setup prepares one migrated database per run.
 */
export default defineConfig({
  test: {
    root: fileURLToPath(new URL("..", import.meta.url)),
    include: ["test/**/*.test.ts"],
    exclude: ["test/worker/**", "node_modules/**"],
    globalSetup: ["test/support/global-setup.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: "forks",
  },
});
