import { fileURLToPath } from "node:url";
import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

/** Tests inside workerd, against the Worker of wrangler.toml (Durable Objects, bindings). */
export default defineConfig({
  plugins: [
    cloudflareTest({
      wrangler: { configPath: "./wrangler.toml" },
      miniflare: { bindings: { DATABASE_URL: "postgres://unused@127.0.0.1:9/unused", CURSOR_SECRET: "worker-test-cursor-secret-0123" } },
    }),
  ],
  test: {
    root: fileURLToPath(new URL("../..", import.meta.url)),
    include: ["test/worker/**/*.test.ts"],
    testTimeout: 60_000,
  },
});
