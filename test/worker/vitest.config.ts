import { fileURLToPath } from "node:url";
import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";
import { ADMIN_TOKEN, CURSOR_SECRET, PUBLIC_BASE_URL, SECRETS_KEY, WEB_APP_URL } from "../support/constants.ts";

const workerHarness = fileURLToPath(new URL("./support/harness.ts", import.meta.url));

/**
 * Tests inside workerd, against the Worker of wrangler.toml (Durable Objects, bindings), whose
 * Neon driver reaches a real Postgres wire endpoint through the local WebSocket bridge started by
 * global-setup.ts (embedded PGlite by default; TEST_DATABASE_URL's server when set).
 *
 * The v1 and admin contract files (test/routes) run here unchanged: their `support/harness`
 * import resolves to test/worker/support/harness.ts, which sends requests through SELF.fetch.
 */
export default defineConfig({
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
    alias: [{ find: /^(\.\.\/)+support\/harness$/, replacement: workerHarness }],
  },
  test: {
    root: fileURLToPath(new URL("../..", import.meta.url)),
    include: ["test/worker/**/*.test.ts", "test/routes/**/*.test.ts"],
    // A browser test drives Chromium against a server process: Node only.
    exclude: ["**/*.browser.test.ts", "node_modules/**"],
    globalSetup: ["test/worker/global-setup.ts"],
    // Generous: some files send hundreds of requests through workerd, slow on a loaded 2-core machine.
    testTimeout: 180_000,
    hookTimeout: 120_000,
  },
});
