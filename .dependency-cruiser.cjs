/**
 * The layers of src/ (README.md, "Layout"), checked by `npm run lint:deps` (dependency-cruiser):
 * no import cycles, type-only imports included, and no import that climbs back up the layers.
 * From the bottom: lib; db; ingest, checks, notifications; services; auth; middleware, routes, web (the pages) and mcp (the MCP tools);
 * app; the runtime entries (node, worker, seed, cli) and the simulator's replay.
 */
const SRC = "^src/";
const layer = (name) => `^src/${name}(/|\\.ts$)`;

/** `from` may not import `to`: one rule per pair of layers, each with its reason. */
const forbid = (name, from, to, comment) => ({ name, comment, severity: "error", from: { path: from }, to: { path: to } });

module.exports = {
  forbidden: [
    {
      name: "no-circular",
      comment: "Import cycles, type-only ones included, tangle the layers; move the shared piece down instead.",
      severity: "error",
      from: {},
      to: { circular: true },
    },
    forbid(
      "lib-is-the-bottom",
      layer("lib"),
      `${SRC}(?!lib/)`,
      "src/lib holds plain utilities and the vocabulary; it imports nothing else of src.",
    ),
    forbid("db-only-on-lib", layer("db"), `${SRC}(?!lib/|db/)`, "The schema and drivers depend on the vocabulary and utilities only."),
    forbid(
      "domain-below-services",
      `^src/(ingest|checks|notifications)/`,
      `^src/(services|auth|routes|middleware|app|app-env|node|worker|seed|cli|simulator)(/|\\.ts$)`,
      "Parsers, checks and webhook rules are plain functions that services call, never the reverse.",
    ),
    forbid(
      "services-below-http",
      layer("services"),
      `^src/(auth|mcp|routes|middleware|web|app|app-env|node|worker|seed|cli|simulator)(/|\\.ts$)`,
      "Services never import routes, middleware, the app or an entry: they take { db, clock, … } and an input.",
    ),
    forbid(
      "auth-below-http",
      layer("auth"),
      `^src/(mcp|routes|middleware|web|app|node|worker|seed|cli|simulator)(/|\\.ts$)`,
      "The key gate and people's sessions are used by the middleware and the pages, not the reverse.",
    ),
    forbid(
      "http-below-entries",
      `^src/(mcp|routes|middleware|web|app|app-env)(/|\\.ts$)`,
      `^src/(node|worker|seed|cli|simulator)(/|\\.ts$)`,
      "The app is built by the runtime entries; it never reaches into one.",
    ),
    forbid(
      "cli-stands-alone",
      layer("cli"),
      `${SRC}(?!cli/|lib/|ingest/(upload-body|report|junit)\\.ts)`,
      "The uploader CLI is bundled for CI runners: it shares the pure upload rules, never the server.",
    ),
    forbid("src-not-on-tests", SRC, "^(test|bench|scripts)/", "The product never imports its tests, benchmarks or scripts."),
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    exclude: { path: "^(node_modules|dist|\\.wrangler)/" },
  },
};
