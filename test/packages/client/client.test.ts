/**
 * The typed client (packages/client, as shipped: its compiled dist/) against the real Node server
 * as a child process (PGlite in memory, or the run's Postgres database): data created through the
 * admin API and the upload client, lists paged through with `paginate`, typed reads and a PATCH,
 * and every error answer thrown as ApiError with the envelope's code. The types are checked too:
 * `npm run typecheck` compiles this file against the package's declarations. Last, the tarball
 * `npm pack` makes is unpacked as a dependency of an empty project, which compiles the README's
 * usage with TypeScript and runs plain JavaScript against the server.
 */
import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from "vitest";
import { testDatabaseUrl } from "../../support/harness";
import {
  ApiError,
  type ApiErrorCode,
  type Schemas,
  createClient,
  createUploadClient,
  paginate,
} from "../../../packages/client/dist/index.js";
import { type ServerProcess, startServerProcess } from "../../support/server-process";

const ADMIN_TOKEN = "client-test-admin-token-0123456789";
const json = { "content-type": "application/json" };
const PROJECT_COUNT = 5;
const ROOT = fileURLToPath(new URL("../../..", import.meta.url));
const run = promisify(execFile);

let server: ServerProcess;
let apiKey: string;
let organizationId: string;
let projectIds: string[];
let uploadToken: string;

/** A fetch that records the URLs it was asked for, then asks the real server. */
function recordingFetch() {
  const urls: URL[] = [];
  const fetchAndRecord = (request: Request) => {
    urls.push(new URL(request.url));
    return fetch(request);
  };
  return { urls, fetch: fetchAndRecord };
}

async function waitForProcessedRun(number: number) {
  const uploads = createUploadClient({ baseUrl: server.base, uploadToken });
  await server.until(async () => {
    const { data } = await uploads.GET("/uploads/v1/test_runs/{number}", { params: { path: { number } } });
    return data.status !== "pending";
  }, 30_000);
}

beforeAll(async () => {
  server = await startServerProcess({
    DATABASE_URL: (await testDatabaseUrl()) ?? "memory://",
    ADMIN_TOKEN,
    SECRETS_KEY: "client-test-secrets-key-0123456789abcdef",
  });
  const organization = await server.call("POST", "/admin/v1/organizations", ADMIN_TOKEN, JSON.stringify({ name: "Typed client" }), json);
  expect(organization.status).toBe(201);
  apiKey = organization.body.api_key.secret;
  organizationId = organization.body.organization.id;
  projectIds = [];
  for (let i = 0; i < PROJECT_COUNT; i++) {
    const project = await server.call(
      "POST",
      `/admin/v1/organizations/${organizationId}/projects`,
      ADMIN_TOKEN,
      JSON.stringify({ name: `Project ${i}` }),
      json,
    );
    expect(project.status).toBe(201);
    projectIds.push(project.body.project.id);
    if (i === 0) uploadToken = project.body.upload_token;
  }
});

afterAll(async () => {
  await server?.stop();
});

describe("createClient and paginate", () => {
  it("pages through every project of the organization, following next_cursor across several pages", async () => {
    const recorder = recordingFetch();
    const api = createClient({ baseUrl: server.base, apiKey, fetch: recorder.fetch });
    const projects: Schemas["Project"][] = [];
    for await (const project of paginate(api, "/projects", { params: { query: { limit: 2 } } })) {
      expectTypeOf(project).toEqualTypeOf<Schemas["Project"]>();
      projects.push(project);
    }
    expect(projects.map((p) => p.id).sort()).toEqual([...projectIds].sort());
    // 5 projects, 2 a page: three requests, the first without a cursor, the others with the one before's.
    expect(recorder.urls).toHaveLength(3);
    expect(recorder.urls.map((url) => url.pathname)).toEqual(["/api/v1/projects", "/api/v1/projects", "/api/v1/projects"]);
    expect(recorder.urls.map((url) => url.searchParams.get("limit"))).toEqual(["2", "2", "2"]);
    expect(recorder.urls[0]!.searchParams.has("cursor")).toBe(false);
    expect(recorder.urls[1]!.searchParams.get("cursor")).toBeTruthy();
    expect(recorder.urls[2]!.searchParams.get("cursor")).not.toBe(recorder.urls[1]!.searchParams.get("cursor"));
  });

  it("fetches no further page when the loop stops early", async () => {
    const recorder = recordingFetch();
    const api = createClient({ baseUrl: server.base, apiKey, fetch: recorder.fetch });
    let seen = 0;
    for await (const _project of paginate(api, "/projects", { params: { query: { limit: 2 } } })) {
      if (++seen === 2) break;
    }
    expect(recorder.urls).toHaveLength(1);
  });

  it("gets one project and PATCHes it, typed by the operation", async () => {
    const api = createClient({ baseUrl: `${server.base}/api/v1/`, apiKey });
    const id = projectIds[1]!;
    const { data, response } = await api.GET("/projects/{id}", { params: { path: { id } } });
    expectTypeOf(data).toEqualTypeOf<Schemas["Project"]>();
    expect(response.status).toBe(200);
    expect(data).toMatchObject({ id, name: "Project 1" });

    const patched = await api.PATCH("/projects/{id}", {
      params: { path: { id } },
      body: { name: "Renamed", description: "Through the typed client" },
    });
    expect(patched.data).toMatchObject({ id, name: "Renamed", description: "Through the typed client" });
    const again = await api.GET("/projects/{id}", { params: { path: { id } } });
    expect(again.data.name).toBe("Renamed");

    const organization = await api.GET("/organization");
    expect(organization.data.id).toBe(organizationId);
  });

  it("uploads through the upload client, then lists the run's tests and reads one", async () => {
    const uploads = createUploadClient({ baseUrl: server.base, uploadToken });
    const accepted = await uploads.POST("/uploads/v1/test_runs", {
      body: {
        branch: "main",
        commit_sha: "a".repeat(40),
        suites: [
          {
            name: "Checkout",
            cases: ["pays", "refunds", "cancels"].map((name) => ({
              name,
              status: name === "refunds" ? ("failed" as const) : ("passed" as const),
              duration_ms: 12,
            })),
          },
        ],
      },
    });
    expect(accepted.response.status).toBe(202);
    await waitForProcessedRun(accepted.data.number);

    const api = createClient({ baseUrl: server.base, apiKey });
    const projectId = projectIds[0]!;
    const tests: Schemas["Test"][] = [];
    for await (const test of paginate(api, "/projects/{id}/tests", {
      params: { path: { id: projectId }, query: { limit: 1, sort: "name" } },
    }))
      tests.push(test);
    expect(tests.map((t) => t.name)).toEqual(["cancels", "pays", "refunds"]);

    const { data: test } = await api.GET("/tests/{id}", { params: { path: { id: tests[2]!.id } } });
    expect(test).toMatchObject({ id: tests[2]!.id, name: "refunds" });
    const runs = await api.GET("/projects/{id}/test_runs", { params: { path: { id: projectId } } });
    expect(runs.data.data.map((run) => run.number)).toContain(accepted.data.number);
  });
});

describe("ApiError", () => {
  it("a missing project is thrown as ApiError with code not_found, its status and its request id", async () => {
    const api = createClient({ baseUrl: server.base, apiKey });
    const error = await api.GET("/projects/{id}", { params: { path: { id: randomUUID() } } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    const apiError = error as ApiError;
    expectTypeOf(apiError.code).toEqualTypeOf<ApiErrorCode | null>();
    expect(apiError).toMatchObject({ name: "ApiError", status: 404, code: "not_found" });
    expect(apiError.message).toBeTruthy();
    expect(apiError.requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(apiError.requestId).toBe(apiError.response.headers.get("request-id"));
  });

  it("another organization's project is not found either, through paginate too", async () => {
    const other = await server.call("POST", "/admin/v1/organizations", ADMIN_TOKEN, JSON.stringify({ name: "Other" }), json);
    const otherApi = createClient({ baseUrl: server.base, apiKey: other.body.api_key.secret });
    await expect(otherApi.GET("/projects/{id}", { params: { path: { id: projectIds[0]! } } })).rejects.toMatchObject({
      status: 404,
      code: "not_found",
    });
    const iterator = paginate(otherApi, "/projects/{id}/tests", { params: { path: { id: projectIds[0]! } } });
    await expect(iterator.next()).rejects.toMatchObject({ status: 404, code: "not_found" });
  });

  it("a wrong API key is thrown as ApiError with code unauthorized (401)", async () => {
    const api = createClient({ baseUrl: server.base, apiKey: "cta_not_a_real_key" });
    await expect(api.GET("/projects")).rejects.toMatchObject({ name: "ApiError", status: 401, code: "unauthorized" });
  });

  it("a bad body is thrown with the rejected fields in details", async () => {
    const api = createClient({ baseUrl: server.base, apiKey });
    const error = (await api
      .PATCH("/projects/{id}", { params: { path: { id: projectIds[2]! } }, body: { name: "" } })
      .catch((e: unknown) => e)) as ApiError;
    expect(error).toBeInstanceOf(ApiError);
    expect(error.status).toBe(422);
    expect(error.code).toBe("validation_failed");
    expect(error.details.map((d) => d.field)).toContain("name");
  });

  it("an answer that is not the API's envelope (a gateway's page) has code null and says so", async () => {
    const gateway = async () =>
      new Response("<html>Bad gateway</html>", { status: 502, statusText: "Bad Gateway", headers: { "content-type": "text/html" } });
    const api = createClient({ baseUrl: server.base, apiKey, fetch: gateway });
    await expect(api.GET("/projects")).rejects.toMatchObject({
      status: 502,
      code: null,
      message: "HTTP 502 Bad Gateway (not an API error body)",
    });
  });
});

describe("retry policy", () => {
  /** Answers `status` with `Retry-After: retryAfter` the first `times` calls, then asks the real server. */
  function failingFirst(times: number, status: number, retryAfter: string) {
    const calls: string[] = [];
    const fetchOnce = async (request: Request) => {
      calls.push(request.method);
      if (calls.length <= times) {
        const code = status === 429 ? "rate_limited" : "service_unavailable";
        return Response.json({ error: { code, message: "Try again." } }, { status, headers: { "retry-after": retryAfter } });
      }
      return fetch(request);
    };
    return { calls, fetch: fetchOnce };
  }

  it("is off by default: a 429 is thrown with its Retry-After in seconds", async () => {
    const stub = failingFirst(1, 429, "7");
    const api = createClient({ baseUrl: server.base, apiKey, fetch: stub.fetch });
    await expect(api.GET("/projects")).rejects.toMatchObject({ status: 429, code: "rate_limited", retryAfter: 7 });
    expect(stub.calls).toHaveLength(1);
  });

  it("retries 429 and 503 as Retry-After says, the body sent again on each attempt", async () => {
    const stub = failingFirst(2, 503, "0");
    const api = createClient({ baseUrl: server.base, apiKey, fetch: stub.fetch, retry: { maxRetries: 2 } });
    const { data } = await api.PATCH("/projects/{id}", { params: { path: { id: projectIds[3]! } }, body: { name: "After retries" } });
    expect(data.name).toBe("After retries");
    expect(stub.calls).toEqual(["PATCH", "PATCH", "PATCH"]);
  });

  it("gives up after maxRetries, and at once when Retry-After asks for longer than maxDelayMs", async () => {
    const exhausted = failingFirst(5, 429, "0");
    const api = createClient({ baseUrl: server.base, apiKey, fetch: exhausted.fetch, retry: { maxRetries: 2 } });
    await expect(api.GET("/projects")).rejects.toMatchObject({ status: 429 });
    expect(exhausted.calls).toHaveLength(3);

    const tooLong = failingFirst(1, 503, "120");
    const patient = createClient({ baseUrl: server.base, apiKey, fetch: tooLong.fetch, retry: { maxDelayMs: 1_000 } });
    await expect(patient.GET("/projects")).rejects.toMatchObject({ status: 503, code: "service_unavailable", retryAfter: 120 });
    expect(tooLong.calls).toHaveLength(1);
  });
});

describe("types", () => {
  it("refuses unknown paths, missing path parameters and bodies of the wrong shape at compile time", () => {
    const api = createClient({ baseUrl: server.base, apiKey });
    // Never called: each line only has to fail to compile (npm run typecheck).
    const _unused = () => {
      // @ts-expect-error not an operation of /api/v1
      void api.GET("/nowhere", {});
      // @ts-expect-error the upload interface is the upload client's
      void api.GET("/uploads/v1/quarantined_tests", {});
      // @ts-expect-error the path parameter is required
      void api.GET("/projects/{id}");
      // @ts-expect-error name is a string
      void api.PATCH("/projects/{id}", { params: { path: { id: "x" } }, body: { name: 42 } });
      // @ts-expect-error not a list
      void paginate(api, "/projects/{id}", { params: { path: { id: "x" } } });
    };
    expect(typeof _unused).toBe("function");
  });
});

describe("the package as installed from its tarball", () => {
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "cta-client-"));
    const { stdout } = await run("npm", ["pack", "--json", "--pack-destination", dir], { cwd: join(ROOT, "packages/client") });
    const [packed] = JSON.parse(stdout) as { filename: string; files: { path: string }[] }[];
    expect(packed!.files.map((f) => f.path).sort()).toEqual(
      [
        "README.md",
        "openapi.json",
        "package.json",
        ...["client", "errors", "index", "pagination", "schema"].flatMap((n) => [`dist/${n}.d.ts`, `dist/${n}.js`]),
      ].sort(),
    );
    // What `npm install <tarball>` lays out: the package unpacked, and its dependency beside it
    // (linked to the repository's copy: these tests reach no registry).
    const target = join(dir, "node_modules/ci-test-analytics-client");
    mkdirSync(target, { recursive: true });
    await run("tar", ["-xzf", join(dir, packed!.filename), "-C", target, "--strip-components=1"]);
    symlinkSync(join(ROOT, "node_modules/openapi-fetch"), join(dir, "node_modules/openapi-fetch"));
    writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }));
  });
  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("compiles the README's usage in a project of its own (NodeNext, strict)", async () => {
    writeFileSync(
      join(dir, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          target: "ES2022",
          module: "NodeNext",
          moduleResolution: "NodeNext",
          lib: ["ES2022", "DOM"],
          types: [],
          strict: true,
          noEmit: true,
        },
        include: ["consumer.ts"],
      }),
    );
    writeFileSync(
      join(dir, "consumer.ts"),
      `import { ApiError, createClient, createUploadClient, paginate, type Schemas } from "ci-test-analytics-client";
declare const projectId: string;
declare const commit_sha: string;
const api = createClient({ baseUrl: "https://analytics.example.com", apiKey: "cta_x", retry: true });
const { data: project } = await api.GET("/projects/{id}", { params: { path: { id: projectId } } });
const runs: number = project.test_runs_count;
await api.PATCH("/projects/{id}", { params: { path: { id: projectId } }, body: { description: "Checkout service" } });
for await (const test of paginate(api, "/projects/{id}/tests", { params: { path: { id: projectId }, query: { health: "flaky", limit: 50 } } })) {
  const rate: number | null = test.flip_rate;
  console.log(test.name, rate, runs);
}
for await (const alert of paginate(api, "/alerts")) console.log(alert.alert_type satisfies Schemas["Alert"]["alert_type"]);
try {
  await api.GET("/tests/{id}", { params: { path: { id: projectId } } });
} catch (error) {
  if (!(error instanceof ApiError) || error.code !== "not_found") throw error;
}
const uploads = createUploadClient({ baseUrl: "https://analytics.example.com", uploadToken: "ctu_x" });
const { data: run } = await uploads.POST("/uploads/v1/test_runs", {
  body: { branch: "main", commit_sha, suites: [{ name: "Checkout", cases: [{ name: "pays", status: "passed", duration_ms: 12 }] }] },
});
const { data: quarantined } = await uploads.GET("/uploads/v1/quarantined_tests");
console.log(run.number, quarantined);
`,
    );
    const tsc = join(ROOT, "node_modules/typescript/bin/tsc");
    const result = await run(process.execPath, [tsc, "-p", "tsconfig.json"], { cwd: dir }).catch((error: { stdout: string }) => ({
      stdout: error.stdout,
      failed: true,
    }));
    expect(result.stdout).toBe("");
  });

  it("runs as plain JavaScript against the server, with no build step", async () => {
    writeFileSync(
      join(dir, "consumer.mjs"),
      `import { ApiError, createClient, paginate } from "ci-test-analytics-client";
const api = createClient({ baseUrl: process.argv[2], apiKey: process.argv[3] });
const names = [];
for await (const project of paginate(api, "/projects", { params: { query: { limit: 2 } } })) names.push(project.name);
const missing = await api.GET("/projects/{id}", { params: { path: { id: "00000000-0000-4000-8000-000000000000" } } }).catch((e) => e);
console.log(JSON.stringify({ count: names.length, notFound: missing instanceof ApiError ? missing.code : String(missing) }));
`,
    );
    const { stdout } = await run(process.execPath, ["consumer.mjs", server.base, apiKey], { cwd: dir });
    expect(JSON.parse(stdout)).toEqual({ count: PROJECT_COUNT, notFound: "not_found" });
  });
});
