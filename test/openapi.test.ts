/**
 * The OpenAPI document is generated from the route schemas; these tests hold it to docs/api-decisions.md:
 * 3.1, clean under Redocly's recommended rules, every operation documented with its errors,
 * and real responses conforming to the documented schemas.
 */
import { createConfig, lintFromString } from "@redocly/openapi-core";
import { z } from "zod";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  AlertEventSchema,
  AlertSchema,
  ErrorEnvelopeSchema,
  OrganizationSchema,
  ProjectSchema,
  QuarantineSchema,
  QuarantinedTestsForCiSchema,
  TestSchema,
  listOf,
} from "../src/contract/schemas";
import { ADMIN_TOKEN, type Harness, PUBLIC_BASE_URL, createHarness } from "./support/harness";

let h: Harness;
let doc: any;
beforeAll(async () => {
  h = await createHarness();
  const res = await h.get("/api/v1/openapi.json");
  expect(res.status).toBe(200);
  doc = res.body;
});
afterAll(() => h.close());

const SPEC_OPERATIONS = [
  ["get", "/organization"],
  ["get", "/projects"],
  ["get", "/projects/{id}"],
  ["patch", "/projects/{id}"],
  ["get", "/alerts"],
  ["get", "/alerts/{id}"],
  ["get", "/alerts/{alert_id}/events"],
  ["post", "/alerts/{id}/snooze"],
  ["post", "/alerts/{id}/unsnooze"],
  ["post", "/alerts/{id}/enable"],
  ["post", "/alerts/{id}/disable"],
] as const;

describe("GET /api/v1/openapi.json", () => {
  it("is a public OpenAPI 3.1 document with servers declared", () => {
    expect(doc.openapi).toBe("3.1.0");
    expect(doc.servers?.[0]?.url).toMatch(/\/api\/v1$/);
    expect(doc.components.securitySchemes.bearerAuth).toMatchObject({ type: "http", scheme: "bearer" });
  });

  it("every list says in its description that unknown query parameters are ignored, and a misspelled filter really lists everything", async () => {
    const lists = Object.entries(doc.paths as Record<string, any>).filter(([, item]) => {
      const ok = item.get?.responses?.["200"]?.content?.["application/json"]?.schema;
      const ref: string | undefined = ok?.$ref;
      return ref !== undefined && doc.components.schemas[ref.split("/").at(-1)!]?.properties?.pagination !== undefined;
    });
    expect(lists.map(([path]) => path).sort()).toEqual(
      [
        "/alerts",
        "/alerts/{alert_id}/events",
        "/projects",
        "/projects/{id}/test_runs",
        "/projects/{id}/test_runs/{number}/test_suites",
        "/projects/{id}/test_runs/{number}/parts",
        "/projects/{id}/test_runs/{number}/test_suites/{suite_number}/test_cases",
        "/projects/{id}/tests",
        "/tests/{id}/executions",
        "/tests/{id}/health_transitions",
        "/projects/{id}/failure_groups",
        "/tests/{id}/failure_groups",
        "/projects/{id}/test_runs/{number}/failure_groups",
        "/projects/{id}/test_runs/{number}/comparison/failures",
        "/projects/{id}/test_runs/{number}/comparison/fixed",
        "/uploads/v1/test_runs/{number}/comparison/failures",
      ].sort(),
    );
    for (const [path, item] of lists)
      expect(item.get.description, path).toMatch(/(^|\n)Query parameters this list does not know are ignored, not refused/);

    const { organization, apiKey } = await h.newOrganization();
    const { project } = await h.newProject(organization.id);
    const failing = { suites: [{ name: "s", cases: [{ name: "t", status: "failed" as const }] }] };
    await h.newRun(project.id, { report: failing });
    await h.newRun(project.id);
    const misspelled = await h.get(`/api/v1/projects/${project.id}/test_runs?reslt=tests_failed`, apiKey);
    expect(misspelled.status).toBe(200);
    expect(misspelled.body.data).toHaveLength(2);
  });

  it("documents all 11 endpoints with operationId, summary, tag, security and error responses", () => {
    for (const [method, path] of SPEC_OPERATIONS) {
      const operation = doc.paths[path]?.[method];
      expect(operation, `${method} ${path}`).toBeDefined();
      expect(operation.operationId).toMatch(/^[a-z][A-Za-z]+$/);
      expect(operation.summary).toBeTruthy();
      expect(operation.tags?.length).toBeGreaterThan(0);
      expect(operation.security).toEqual([{ bearerAuth: [] }]);
      for (const status of ["401", "429", "500", "503"]) {
        expect(operation.responses[status]?.content["application/json"].schema.$ref, `${method} ${path} ${status}`).toBe(
          "#/components/schemas/Error",
        );
      }
    }
    const ids = SPEC_OPERATIONS.map(([m, p]) => doc.paths[p][m].operationId);
    expect(new Set(ids).size).toBe(ids.length);
    expect(doc.paths["/projects/{id}"].patch.responses["422"]).toBeDefined();
    expect(doc.paths["/alerts/{id}/snooze"].post.responses["422"]).toBeDefined();
    expect(doc.paths["/alerts"].get.responses["404"]).toBeDefined();
  });

  it("declares enums as enums and nullable fields as nullable", () => {
    const alert = doc.components.schemas.Alert;
    expect(doc.components.schemas.AlertType.enum).toEqual([
      "performance_regression",
      "test_flakiness",
      "skipped_test_count_creep",
      "failure_rate_spike",
    ]);
    expect(alert.properties.snoozed_until.type).toEqual(["string", "null"]);
    const statusParam = doc.paths["/alerts"].get.parameters.find((p: any) => p.name === "status");
    expect(statusParam.schema.enum).toEqual(["active", "snoozed", "inactive", "all"]);
    expect(doc.components.schemas.SnoozeRequest.properties.duration.enum).toEqual(["1h", "4h", "24h", "1w"]);
  });

  it("passes Redocly's recommended lint rules without errors or warnings", async () => {
    // Its server is the configured public base URL, a public host name as in production (the linter flags localhost servers).
    const served = (await h.get("/api/v1/openapi.json")).body;
    expect(served.servers[0].url).toBe(`${PUBLIC_BASE_URL}/api/v1`);
    const config = await createConfig({ extends: ["recommended"] });
    const problems = await lintFromString({ source: JSON.stringify(served), absoluteRef: "openapi.json", config });
    const summary = problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message} @ ${p.location[0]?.pointer}`);
    expect(summary).toEqual([]);
  });
});

describe("GET /uploads/v1/openapi.json", () => {
  it("passes Redocly's recommended lint rules without errors or warnings", async () => {
    const served = (await h.get("/uploads/v1/openapi.json")).body;
    expect(served.servers[0].url).toBe(`${PUBLIC_BASE_URL}/uploads/v1`);
    const config = await createConfig({ extends: ["recommended"] });
    const problems = await lintFromString({ source: JSON.stringify(served), absoluteRef: "openapi.json", config });
    const summary = problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message} @ ${p.location[0]?.pointer}`);
    expect(summary).toEqual([]);
  });

  it("documents the four operations with their errors", async () => {
    const served = (await h.get("/uploads/v1/openapi.json")).body;
    const upload = served.paths["/test_runs"].post;
    expect(upload.operationId).toBe("uploadTestRun");
    expect(Object.keys(upload.responses).sort()).toEqual(["202", "400", "401", "413", "415", "422", "429", "500", "503"]);
    // Its 429 is a rate (rate_limited, Retry-After) or the stored-cases quota (quota_exceeded, none).
    expect(upload.responses["429"].description).toMatch(/rate_limited.*Retry-After.*quota_exceeded.*QUOTA_STORED_CASES.*no Retry-After/);
    expect(upload.description).toContain("QUOTA_STORED_CASES");
    expect(served.paths["/test_runs/{number}"].get.operationId).toBe("getUploadedTestRun");
    const quarantined = served.paths["/quarantined_tests"].get;
    expect(quarantined.operationId).toBe("listQuarantinedTests");
    expect(quarantined.security).toEqual([{ uploadToken: [] }]);
    expect(Object.keys(quarantined.responses).sort()).toEqual(["200", "304", "400", "401", "429", "500", "503"]);
    expect(quarantined.responses["200"].headers.ETag).toBeDefined();
    // Splitting (docs/splitting.md): the timings with their ETag, the plan with its 409.
    const timings = served.paths["/timings"].get;
    expect(timings.operationId).toBe("listTimings");
    expect(timings.security).toEqual([{ uploadToken: [] }]);
    expect(Object.keys(timings.responses).sort()).toEqual(["200", "304", "400", "401", "429", "500", "503"]);
    expect(timings.responses["200"].headers.ETag).toBeDefined();
    const plan = served.paths["/split_plans"].post;
    expect(plan.operationId).toBe("createSplitPlan");
    expect(Object.keys(plan.responses).sort()).toEqual(["200", "400", "401", "409", "413", "415", "422", "429", "500", "503"]);
    expect(plan.responses["409"].description).toContain("split_plan_mismatch");
    const codeowners = served.paths["/codeowners"].put;
    expect(codeowners.operationId).toBe("putCodeowners");
    expect(codeowners.security).toEqual([{ uploadToken: [] }]);
    expect(Object.keys(codeowners.requestBody.content)).toEqual(["text/plain"]);
    expect(Object.keys(codeowners.responses).sort()).toEqual(["200", "400", "401", "413", "415", "429", "500", "503"]);
    expect(Object.keys(served.components.schemas.CodeownersUpload.properties).sort()).toEqual([
      "changed",
      "files_over_budget_count",
      "ignored_lines",
      "ignored_lines_count",
      "rules_count",
      "tests_count",
      "tests_with_owners_count",
      "updated_at",
    ]);
  });
});

describe("owners are documented in /api/v1", () => {
  it("the test's owners, the owner filter, and the upload operation under its full path", () => {
    expect(doc.components.schemas.Test.properties.owners.type).toBe("array");
    expect(doc.components.schemas.Test.required).toContain("owners");
    const filter = doc.paths["/projects/{id}/tests"].get.parameters.find((p: any) => p.name === "owner");
    expect(filter).toMatchObject({ in: "query", required: false });
    expect(doc.paths["/uploads/v1/codeowners"].put.operationId).toBe("putCodeowners");
  });
});

describe("quarantine is documented in /api/v1", () => {
  it("the two operations, the request's fields and the filter", () => {
    const quarantine = doc.paths["/tests/{id}/quarantine"].post;
    expect(quarantine.operationId).toBe("quarantineTest");
    expect(Object.keys(quarantine.responses).sort()).toEqual(["200", "400", "401", "404", "413", "422", "429", "500", "503"]);
    expect(doc.paths["/tests/{id}/unquarantine"].post.operationId).toBe("unquarantineTest");
    const request = doc.components.schemas.QuarantineRequest;
    expect(Object.keys(request.properties).sort()).toEqual(["all_variants", "duration", "expires_at", "issue_url", "owner", "reason"]);
    expect(request.required).toEqual(["reason"]);
    const filter = doc.paths["/projects/{id}/tests"].get.parameters.find((p: any) => p.name === "quarantined");
    expect(filter.schema.enum).toEqual(["true", "false"]);
    expect(doc.components.schemas.Test.properties.quarantine).toBeDefined();
  });
});

describe("servers come from the configured public base URL, never from the request", () => {
  it("a request to another host, with a forged Host or X-Forwarded-Host, gets the configured servers in all three documents", async () => {
    const forged = { headers: { host: "evil.example", "x-forwarded-host": "evil2.example", forwarded: "host=evil3.example" } };
    const v1 = await h.get("https://evil.example/api/v1/openapi.json", null, forged);
    const uploads = await h.get("https://evil.example/uploads/v1/openapi.json", null, forged);
    const admin = await h.get("https://evil.example/admin/v1/openapi.json", ADMIN_TOKEN, forged);
    expect(v1.body.servers[0].url).toBe(`${PUBLIC_BASE_URL}/api/v1`);
    expect(v1.body.paths["/uploads/v1/test_runs"].servers[0].url).toBe(PUBLIC_BASE_URL);
    expect(uploads.body.servers[0].url).toBe(`${PUBLIC_BASE_URL}/uploads/v1`);
    expect(admin.body.servers).toEqual([{ url: `${PUBLIC_BASE_URL}/admin/v1` }]);
    for (const res of [v1, uploads, admin]) expect(res.text).not.toContain("evil");
  });
});

describe("the test result reads are documented in /api/v1", () => {
  it("lists the five operations", () => {
    const ids = ["listTestRuns", "getTestRun", "listTestSuites", "listTestCases", "getTestCase"];
    const found = Object.values(doc.paths).flatMap((item: any) => Object.values(item).map((op: any) => op.operationId));
    expect(found).toEqual(expect.arrayContaining(ids));
  });
});

describe("the upload operations are documented in /api/v1 too", () => {
  it("under their full paths, each with the public base URL as its server, the upload token as security", async () => {
    const served = (await h.get("/api/v1/openapi.json")).body;
    const uploads = (await h.get("/uploads/v1/openapi.json")).body;
    const upload = served.paths["/uploads/v1/test_runs"];
    expect(upload.servers).toEqual([{ url: PUBLIC_BASE_URL, description: expect.any(String) }]);
    expect(upload.post).toEqual(uploads.paths["/test_runs"].post);
    expect(upload.post.security).toEqual([{ uploadToken: [] }]);
    expect(served.paths["/uploads/v1/test_runs/{number}"].get.operationId).toBe("getUploadedTestRun");
    expect(served.components.securitySchemes.uploadToken).toEqual(uploads.components.securitySchemes.uploadToken);
    expect(served.tags.map((t: { name: string }) => t.name)).toContain("Uploads");
    // Every schema the upload operations use is in the document, identical where both define it.
    for (const [name, schema] of Object.entries(uploads.components.schemas)) expect(served.components.schemas[name], name).toEqual(schema);
    // The /api/v1 operations keep /api/v1 as their server.
    expect(served.paths["/projects"].servers).toBeUndefined();
  });
});

describe("responses conform to the documented schemas", () => {
  it("organization, projects, alerts, events and errors", async () => {
    const { organization, apiKey } = await h.newOrganization();
    const { project, alertIds } = await h.newProject(organization.id, "Schema check", "described");
    const run = await h.newRun(project.id, { meta: { branch: "main", tags: ["nightly"] } });
    await h.newEvent(alertIds.test_flakiness!, run.id, { test_name: "a", failure_rate: 0.5 });

    expect(OrganizationSchema.strict().safeParse((await h.get("/api/v1/organization", apiKey)).body).success).toBe(true);
    expect(ProjectSchema.strict().safeParse((await h.get(`/api/v1/projects/${project.id}`, apiKey)).body).success).toBe(true);
    expect(listOf(ProjectSchema, "P").safeParse((await h.get("/api/v1/projects", apiKey)).body).success).toBe(true);
    expect(listOf(AlertSchema, "A").safeParse((await h.get("/api/v1/alerts?status=all", apiKey)).body).success).toBe(true);
    const events = await h.get(`/api/v1/alerts/${alertIds.test_flakiness}/events`, apiKey);
    const parsed = listOf(AlertEventSchema, "E").safeParse(events.body);
    expect(parsed.success, JSON.stringify(parsed.error?.issues)).toBe(true);
    expect(events.body.data).toHaveLength(1);
    expect(ErrorEnvelopeSchema.safeParse((await h.get("/api/v1/projects/nope", apiKey)).body).success).toBe(true);
  });

  it("tests with and without a quarantine, and the CI's list", async () => {
    const { organization, apiKey } = await h.newOrganization();
    const { project, uploadToken } = await h.newProject(organization.id);
    await h.newRun(project.id, {
      report: {
        suites: [
          {
            name: "s",
            cases: [
              { name: "a", status: "passed" },
              { name: "b", status: "passed" },
            ],
          },
        ],
      },
    });
    const [first] = (await h.get(`/api/v1/projects/${project.id}/tests`, apiKey)).body.data;
    const quarantined = await h.post(`/api/v1/tests/${first.id}/quarantine`, apiKey, {
      reason: "r",
      duration: "1d",
      owner: "dev@example.com",
    });
    // Test ids are MD5s shaped as UUIDs (docs/tests.md), without RFC 9562's version bits: any 8-4-4-4-12 hex passes here.
    const testId = z.string().regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    const strict = TestSchema.extend({ id: testId, quarantine: QuarantineSchema.strict().nullable() }).strict();
    expect(strict.safeParse(quarantined.body).success, quarantined.text).toBe(true);
    const parsed = listOf(strict, "T").safeParse((await h.get(`/api/v1/projects/${project.id}/tests`, apiKey)).body);
    expect(parsed.success, JSON.stringify(parsed.error?.issues)).toBe(true);
    const ciItem = QuarantinedTestsForCiSchema.shape.data.element.extend({ test_id: testId }).strict();
    const ci = z
      .object({ data: z.array(ciItem) })
      .strict()
      .safeParse((await h.get("/uploads/v1/quarantined_tests", uploadToken)).body);
    expect(ci.success && ci.data.data.length).toBe(1);
    expect(ci.success, JSON.stringify(ci.error?.issues)).toBe(true);
  });
});
