/**
 * The layers of src/ (README.md, "Layout"), checked by `npm run lint:deps` (dependency-cruiser):
 * no import cycles, type-only imports included, and no import that climbs back up the layers.
 * From the bottom: lib; db; contract (the API's schemas and presenters); ingest, checks, notifications; services (inside it, from
 * the bottom: shared, tenancy, tests, runs, alerts, notifications, then the queue consumer's composition, src/services/*.ts);
 * auth; middleware, routes, web (the pages) and mcp (the MCP tools and their route); app; the runtime entries (node, worker, cli)
 * and the simulator's replay. src/node is the Node entry's alone: nothing else imports it.
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
      "contract-on-lib-and-db",
      layer("contract"),
      `${SRC}(?!lib/|db/|contract/)`,
      "The API's shapes (Zod schemas, presenters of rows) are what services, routes, pages and MCP tools share; they use nothing above the rows.",
    ),
    forbid(
      "domain-below-services",
      `^src/(ingest|checks|notifications)/`,
      `^src/(services|auth|mcp|routes|middleware|web|app|app-env|node|worker|cli|simulator)(/|\\.ts$)`,
      "Parsers, checks and webhook rules are plain functions that services call, never the reverse.",
    ),
    forbid(
      "services-below-http",
      layer("services"),
      `^src/(auth|mcp|routes|middleware|web|app|app-env|node|worker|cli|simulator)(/|\\.ts$)`,
      "Services never import routes, middleware, the app or an entry: they take { db, clock, … } and an input.",
    ),
    forbid(
      "services-shared-is-the-bottom",
      "^src/services/shared/",
      "^src/services/(?!shared/)",
      "The services' common pieces (deps and scopes, data versions, settings, the e-mail outbox, flash messages, daily rollups) belong to no domain.",
    ),
    forbid(
      "tenancy-on-shared",
      "^src/services/tenancy/",
      "^src/services/(?!shared/|tenancy/)",
      "Organizations, people, projects and quotas are what every domain is scoped by; they know nothing of tests, runs or alerts.",
    ),
    forbid(
      "tests-below-runs",
      "^src/services/tests/",
      "^src/services/(?!shared/|tenancy/|tests/)",
      "A test's state, quarantine and owners are advanced by storing a run, which calls them, never the reverse.",
    ),
    forbid(
      "runs-below-alerts",
      "^src/services/runs/",
      "^src/services/(?!shared/|tenancy/|tests/|runs/)",
      "Storing and reading runs comes before the alert checks, which are handed a processed run.",
    ),
    forbid(
      "alerts-below-notifications",
      "^src/services/alerts/",
      "^src/services/(?!shared/|tenancy/|tests/|runs/|alerts/)",
      "The alerts and their checks decide what tripped; notifications deliver it, never the reverse.",
    ),
    forbid(
      "domains-below-composition",
      "^src/services/notifications/",
      "^src/services/[^/]+$",
      "The queue consumer's composition (src/services/*.ts) wires the domains together; no domain reaches back up into it.",
    ),
    forbid(
      "auth-below-http",
      layer("auth"),
      `^src/(mcp|routes|middleware|web|app|node|worker|cli|simulator)(/|\\.ts$)`,
      "The key gate and people's sessions are used by the middleware and the pages, not the reverse.",
    ),
    forbid(
      "http-below-entries",
      `^src/(mcp|routes|middleware|web|app|app-env)(/|\\.ts$)`,
      `^src/(node|worker|cli|simulator)(/|\\.ts$)`,
      "The app is built by the runtime entries; it never reaches into one.",
    ),
    forbid(
      "mcp-beside-routes",
      layer("mcp"),
      `^src/(routes|web)/`,
      "The MCP tools share the contract and the services with the REST routes and the pages, never the routes or pages themselves.",
    ),
    forbid(
      "routes-beside-mcp",
      `^src/(routes|web)/`,
      layer("mcp"),
      "The REST routes and the pages never reach into the MCP tools; the app mounts each.",
    ),
    forbid(
      "mcp-tools-below-their-route",
      "^src/mcp/(?!route\\.ts$)",
      `^src/(mcp/route\\.ts$|middleware/|auth/|app(-env)?\\.ts$)`,
      "The MCP server and tools take plain inputs like the services; only src/mcp/route.ts speaks HTTP (admission, body, methods).",
    ),
    forbid(
      "node-stays-in-node",
      "^src/(?!node/)",
      layer("node"),
      "The Node entry's pieces (the in-process queue, the demo seed, PGlite, files and sockets) never reach the Worker or the layers it is built from.",
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
