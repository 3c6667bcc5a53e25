/**
 * HTTP conventions of the whole app (spec part 7; docs/api-decisions.md): every failure in the error
 * envelope (404 for unknown routes, 405 with Allow for wrong methods, 400 for malformed JSON,
 * 413 for bodies over 64 KiB, 500 without internal details), and the JSON content type plus
 * `nosniff` on every response.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_TOKEN, type CallResult, type Harness, createHarness, faultyKeyCounter } from "../support/harness";

let h: Harness;
/** Its key counter hands back a broken admission: every authenticated request meets an unexpected fault. */
let faulty: Harness;
/** One request per minute per key, to reach 429 quickly. */
let limited: Harness;
beforeAll(async () => {
  h = await createHarness();
  faulty = await createHarness({
    overrides: { keyCounter: faultyKeyCounter("boom-secret-detail") },
  });
  limited = await createHarness({ rateLimit: { limit: 1, windowMs: 60_000 } });
});
afterAll(async () => {
  await h.close();
  await faulty.close();
  await limited.close();
});

const BODY_LIMIT = 64 * 1024;
const UNKNOWN_UUID = "00000000-0000-4000-8000-000000000000";

function expectEnvelope(res: CallResult, status: number, code: string) {
  expect(res.status, res.text).toBe(status);
  expect(res.body, res.text).toBeTypeOf("object");
  expect(Object.keys(res.body)).toEqual(["error"]);
  expect(res.body.error.code).toBe(code);
  expect(typeof res.body.error.message).toBe("string");
  expect(res.body.error.message.length).toBeGreaterThan(0);
  expectJsonHeaders(res);
}

function expectJsonHeaders(res: CallResult) {
  expect(res.headers.get("content-type")).toBe("application/json; charset=utf-8");
  expect(res.headers.get("x-content-type-options")).toBe("nosniff");
}

async function fixture() {
  const { organization, apiKey } = await h.newOrganization("Conventions");
  const { project, alertIds } = await h.newProject(organization.id, "Original", "desc");
  return { orgId: organization.id as string, key: apiKey, project, alertId: alertIds.test_flakiness! };
}

/** A body as a stream without Content-Length (chunked on the wire); the harness's call() cannot send streams. */
function chunkedBody(text: string, chunkSize = 8 * 1024): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode(text);
  let offset = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (offset >= bytes.length) {
        controller.close();
        return;
      }
      controller.enqueue(bytes.slice(offset, offset + chunkSize));
      offset += chunkSize;
    },
  });
}

async function sendStream(
  method: string,
  path: string,
  key: string,
  stream: ReadableStream<Uint8Array>,
  headers: Record<string, string> = {},
): Promise<CallResult> {
  const response = await h.app.request(path, {
    method,
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...headers },
    body: stream,
    duplex: "half",
  } as RequestInit);
  const text = await response.text();
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  return { status: response.status, headers: response.headers, body, text };
}

/** A JSON object body of exactly `size` bytes that renames the project to `name` (padding goes into an ignored field). */
function patchBodyOfSize(size: number, name: string): string {
  const skeleton = JSON.stringify({ name, pad: "" });
  const body = JSON.stringify({ name, pad: "x".repeat(size - skeleton.length) });
  expect(new TextEncoder().encode(body).length).toBe(size);
  return body;
}

describe("unknown routes", () => {
  it.each(["/api/v1/nope", "/api/v1/projects/x/y/z", "/api/v1/alerts/x/events/1", "/api/v1/organizations", "/api/v1/"])(
    "%s under /api/v1 with a valid key is a 404 not_found envelope",
    async (path) => {
      const { key } = await fixture();
      expectEnvelope(await h.get(path, key), 404, "not_found");
    },
  );

  it("an unknown route with a valid key and a body is a 404 envelope too", async () => {
    const { key } = await fixture();
    expectEnvelope(await h.post("/api/v1/nothing/here", key, { a: 1 }), 404, "not_found");
  });

  // `/` itself is the web app's home now (docs/web-app.md); paths that are no page stay 404 envelopes.
  it.each(["/nope", "/projects", "/api", "/api/v2/projects", "/api/v1x/projects", "/uploads/v9"])(
    "%s outside /api/v1 is a 404 not_found envelope",
    async (path) => {
      expectEnvelope(await h.get(path, null), 404, "not_found");
      const { key } = await fixture();
      expectEnvelope(await h.get(path, key), 404, "not_found");
      expectEnvelope(await h.call("POST", path, { body: {} }), 404, "not_found");
    },
  );
});

describe("unknown routes asked for by a browser", () => {
  const BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";

  it.each(["/nope", "/projects", "/projects/x/y/z", "/sign-in/extra"])(
    "%s: the pages' HTML 404, with their security headers",
    async (path) => {
      const res = await h.get(path, null, { headers: { accept: BROWSER_ACCEPT } });
      expect(res.status).toBe(404);
      expect(res.headers.get("content-type")).toMatch(/^text\/html/);
      expect(res.text).toContain("<h1>Not found</h1>");
      expect(res.text).toContain('<a href="/">Back to your projects</a>');
      expect(res.headers.get("content-security-policy")).toContain("default-src 'none'");
      expect(res.headers.get("x-frame-options")).toBe("DENY");
      expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    },
  );

  it.each(["/api/v1/nope", "/api", "/admin/v1/nope", "/uploads/v9", "/mcp/nope"])(
    "%s: an API's path keeps the JSON envelope, whoever asks",
    async (path) => {
      const { key } = await fixture();
      const res = await h.get(path, path.startsWith("/admin/") ? ADMIN_TOKEN : key, { headers: { accept: BROWSER_ACCEPT } });
      expect(res.headers.get("content-type")).toMatch(/^application\/json/);
      expectEnvelope(res, 404, "not_found");
    },
  );

  it("API clients (*/*, JSON, no Accept) and posts keep the JSON envelope", async () => {
    for (const accept of ["*/*", "application/json", ""])
      expectEnvelope(await h.get("/nope", null, { headers: accept ? { accept } : {} }), 404, "not_found");
    expectEnvelope(await h.call("POST", "/nope", { body: {}, headers: { accept: BROWSER_ACCEPT } }), 404, "not_found");
  });
});

describe("wrong methods", () => {
  const cases: [string, (ids: { projectId: string; alertId: string }) => string, string[]][] = [
    ["DELETE", () => "/api/v1/projects", ["GET"]],
    ["POST", () => "/api/v1/projects", ["GET"]],
    ["PUT", ({ alertId }) => `/api/v1/alerts/${alertId}`, ["GET"]],
    ["DELETE", ({ alertId }) => `/api/v1/alerts/${alertId}`, ["GET"]],
    ["GET", ({ alertId }) => `/api/v1/alerts/${alertId}/snooze`, ["POST"]],
    ["PATCH", ({ alertId }) => `/api/v1/alerts/${alertId}/disable`, ["POST"]],
    ["PUT", ({ projectId }) => `/api/v1/projects/${projectId}`, ["GET", "PATCH"]],
    ["DELETE", ({ projectId }) => `/api/v1/projects/${projectId}`, ["GET", "PATCH"]],
    ["POST", () => "/api/v1/organization", ["GET"]],
    ["POST", ({ alertId }) => `/api/v1/alerts/${alertId}/events`, ["GET"]],
  ];

  it.each(cases)("%s %s is a 405 method_not_allowed with an Allow header", async (method, pathOf, allowed) => {
    const { key, project, alertId } = await fixture();
    const res = await h.call(method, pathOf({ projectId: project.id, alertId }), { key });
    expectEnvelope(res, 405, "method_not_allowed");
    const allow = res.headers.get("allow");
    expect(allow).not.toBeNull();
    const methods = allow!.split(",").map((m) => m.trim().toUpperCase());
    for (const m of allowed) expect(methods).toContain(m);
    expect(methods).not.toContain(method);
  });

  it("a malformed or oversized body does not hide a 405 or a 404; operations without a body ignore one", async () => {
    const { key, project, alertId } = await fixture();
    const junk = { key, rawBody: "{not json", headers: { "content-type": "application/json" } };
    expectEnvelope(await h.call("PUT", `/api/v1/projects/${project.id}`, junk), 405, "method_not_allowed");
    expectEnvelope(await h.call("POST", "/api/v1/projects", junk), 405, "method_not_allowed");
    expectEnvelope(await h.call("POST", "/api/v1/nope", junk), 404, "not_found");
    expectEnvelope(await h.call("PUT", `/api/v1/projects/${project.id}`, { key, rawBody: "x".repeat(70_000) }), 405, "method_not_allowed");
    const disabled = await h.call("POST", `/api/v1/alerts/${alertId}/disable`, junk);
    expect(disabled.status).toBe(200);
    expect(disabled.body.active).toBe(false);
    expect((await h.call("POST", `/api/v1/alerts/${alertId}/enable`, junk)).status).toBe(200);
  });

  it("a wrong method on a path with an unknown id is still a 405", async () => {
    const { key } = await fixture();
    const res = await h.call("PUT", `/api/v1/alerts/${UNKNOWN_UUID}`, { key });
    expectEnvelope(res, 405, "method_not_allowed");
    expect(res.headers.get("allow")).toContain("GET");
  });
});

describe("malformed JSON bodies", () => {
  const malformed = ['{"name":', "{name: 'x'}", "[1,", '{"name":"x"}}', "nul", "'x'", '{"name":"x",}'];

  it.each(malformed)("PATCH /projects/:id with %j is a 400 invalid_request and changes nothing", async (raw) => {
    const { key, project } = await fixture();
    const res = await h.call("PATCH", `/api/v1/projects/${project.id}`, {
      key,
      rawBody: raw,
      headers: { "content-type": "application/json" },
    });
    expectEnvelope(res, 400, "invalid_request");
    const after = await h.get(`/api/v1/projects/${project.id}`, key);
    expect(after.body.name).toBe("Original");
    expect(after.body.updated_at).toBe(project.updated_at);
  });

  it.each(malformed)("POST /alerts/:id/snooze with %j is a 400 invalid_request and changes nothing", async (raw) => {
    const { key, alertId } = await fixture();
    const res = await h.call("POST", `/api/v1/alerts/${alertId}/snooze`, {
      key,
      rawBody: raw,
      headers: { "content-type": "application/json" },
    });
    expectEnvelope(res, 400, "invalid_request");
    const after = await h.get(`/api/v1/alerts/${alertId}`, key);
    expect(after.body.snoozed).toBe(false);
    expect(after.body.snoozed_until).toBeNull();
  });

  it("malformed JSON without a Content-Type is a 400 invalid_request as well", async () => {
    const { key, project, alertId } = await fixture();
    expectEnvelope(await h.call("PATCH", `/api/v1/projects/${project.id}`, { key, rawBody: '{"name":' }), 400, "invalid_request");
    expectEnvelope(await h.call("POST", `/api/v1/alerts/${alertId}/snooze`, { key, rawBody: '{"duration":' }), 400, "invalid_request");
  });
});

/** Every operation that reads a JSON body, with a body it accepts; `check` says whether the request took effect. */
async function jsonBodyOperations() {
  const { orgId, key, project, alertId } = await fixture();
  const admin = { key: ADMIN_TOKEN };
  return [
    {
      name: "PATCH /api/v1/projects/:id",
      method: "PATCH",
      path: `/api/v1/projects/${project.id}`,
      auth: { key },
      body: { name: "Renamed" },
      ok: 200,
    },
    {
      name: "POST /api/v1/alerts/:id/snooze",
      method: "POST",
      path: `/api/v1/alerts/${alertId}/snooze`,
      auth: { key },
      body: { duration: "1h" },
      ok: 200,
    },
    { name: "POST /admin/v1/organizations", method: "POST", path: "/admin/v1/organizations", auth: admin, body: { name: "Org" }, ok: 201 },
    {
      name: "POST /admin/v1/organizations/:id/projects",
      method: "POST",
      path: `/admin/v1/organizations/${orgId}/projects`,
      auth: admin,
      body: { name: "P" },
      ok: 201,
    },
    {
      name: "PATCH /admin/v1/projects/:id/check_settings",
      method: "PATCH",
      path: `/admin/v1/projects/${project.id}/check_settings`,
      auth: admin,
      body: { default_branch: "develop" },
      ok: 200,
    },
    {
      name: "POST /admin/v1/organizations/:id/webhooks",
      method: "POST",
      path: `/admin/v1/organizations/${orgId}/webhooks`,
      auth: admin,
      body: { url: "http://127.0.0.1:9/x" },
      ok: 201,
    },
    {
      name: "POST /admin/v1/organizations/:id/invitations",
      method: "POST",
      path: `/admin/v1/organizations/${orgId}/invitations`,
      auth: admin,
      body: { email: "conventions@example.com" },
      ok: 201,
    },
    {
      name: "PATCH /admin/v1/alerts/:id/notification_settings",
      method: "PATCH",
      path: `/admin/v1/alerts/${alertId}/notification_settings`,
      auth: admin,
      body: { notification_cooldown_seconds: 60 },
      ok: 200,
    },
  ];
}

describe("deeply nested JSON bodies (docs/api-decisions.md: at most 64 levels)", () => {
  it("4,500 levels (about 9 KB) is a 400 invalid_request on every operation that reads JSON, never a 500", async () => {
    const deep = `${"[".repeat(4500)}${"]".repeat(4500)}`;
    for (const op of await jsonBodyOperations()) {
      for (const raw of [deep, `{"name":${deep}}`, `{"x":${'{"a":'.repeat(4500)}1${"}".repeat(4500)}}`]) {
        const res = await h.call(op.method, op.path, { ...op.auth, rawBody: raw, headers: { "content-type": "application/json" } });
        expectEnvelope(res, 400, "invalid_request");
        expect(res.body.error.message, op.name).toMatch(/deeper than 64 levels/);
        expect(res.headers.get("request-id"), op.name).toMatch(/^[0-9a-f-]{36}$/);
      }
    }
  });

  it("64 levels are read; brackets inside strings and escaped quotes do not count", async () => {
    const { key, project } = await fixture();
    const nested64 = `${"[".repeat(63)}1${"]".repeat(63)}`;
    const res = await h.call("PATCH", `/api/v1/projects/${project.id}`, { key, rawBody: `{"name":"Deep ok","x":${nested64}}` });
    expect(res.status, res.text).toBe(200);
    const bracketsInName = `[[[{{{\\"${"[".repeat(200)}`;
    const named = await h.call("PATCH", `/api/v1/projects/${project.id}`, {
      key,
      rawBody: JSON.stringify({ name: JSON.parse(`"${bracketsInName}"`) }),
    });
    expect(named.status, named.text).toBe(200);
    expect(named.body.name).toBe(JSON.parse(`"${bracketsInName}"`));
    const tooDeep = await h.call("PATCH", `/api/v1/projects/${project.id}`, {
      key,
      rawBody: `{"name":"x","x":${"[".repeat(64)}${"]".repeat(64)}}`,
    });
    expectEnvelope(tooDeep, 400, "invalid_request");
  });
});

describe("Content-Type of JSON bodies: one rule, the body is read as JSON whatever the header says", () => {
  const contentTypes = [
    "application/json",
    "application/json;;;",
    "application/json; x",
    "application/json ; charset=utf-8",
    "text/plain",
    "application/xml",
    "multipart/form-data; boundary=x",
    "application/json; charset=latin1",
    "nonsense",
    "",
  ];

  it.each(contentTypes)("Content-Type %j: every operation that reads JSON accepts a JSON body", async (contentType) => {
    for (const op of await jsonBodyOperations()) {
      const res = await h.call(op.method, op.path, {
        ...op.auth,
        rawBody: JSON.stringify(op.body),
        headers: contentType ? { "content-type": contentType } : {},
      });
      expect(res.status, `${op.name}: ${res.text}`).toBe(op.ok);
      expectJsonHeaders(res);
    }
  });

  it("malformed JSON under an odd Content-Type is the same 400 invalid_request, never a 415", async () => {
    for (const op of await jsonBodyOperations()) {
      for (const contentType of ["application/json;;;", "text/plain", "application/json; x"]) {
        expectEnvelope(
          await h.call(op.method, op.path, { ...op.auth, rawBody: "{nope", headers: { "content-type": contentType } }),
          400,
          "invalid_request",
        );
      }
    }
  });
});

describe("admin operations without a body ignore one", () => {
  it("regenerating a key or a token and deleting a webhook succeed whatever body comes with them", async () => {
    const { orgId, project } = await fixture();
    const junk = { key: ADMIN_TOKEN, rawBody: "{not json", headers: { "content-type": "application/json" } };
    const big = { key: ADMIN_TOKEN, rawBody: "x".repeat(70_000), headers: { "content-type": "application/json" } };
    const deep = { key: ADMIN_TOKEN, rawBody: "[".repeat(4500), headers: { "content-type": "application/json" } };
    for (const body of [junk, big, deep]) {
      const regenerated = await h.call("POST", `/admin/v1/organizations/${orgId}/api_key/regenerate`, body);
      expect(regenerated.status, regenerated.text).toBe(200);
      expect(regenerated.body.api_key.secret).toMatch(/^cta_/);
      const token = await h.call("POST", `/admin/v1/projects/${project.id}/upload_token/regenerate`, body);
      expect(token.status, token.text).toBe(200);
      const webhook = await h.admin("POST", `/organizations/${orgId}/webhooks`, { url: "http://127.0.0.1:9/y" });
      expect(webhook.status, webhook.text).toBe(201);
      const deleted = await h.call("DELETE", `/admin/v1/webhooks/${webhook.body.webhook.id}`, body);
      expect(deleted.status, deleted.text).toBe(204);
    }
  });

  it("an unknown admin path or a wrong method with a malformed body is a 404 or a 405, not a 400", async () => {
    const { orgId } = await fixture();
    const junk = { key: ADMIN_TOKEN, rawBody: "{not json", headers: { "content-type": "application/json" } };
    expectEnvelope(await h.call("POST", "/admin/v1/nope", junk), 404, "not_found");
    expectEnvelope(await h.call("PUT", `/admin/v1/organizations/${orgId}/webhooks`, junk), 405, "method_not_allowed");
  });
});

describe("body size limit (64 KiB)", () => {
  it("a small valid body works", async () => {
    const { key, project } = await fixture();
    const res = await h.patch(`/api/v1/projects/${project.id}`, key, { name: "Renamed" });
    expect(res.status, res.text).toBe(200);
    expect(res.body.name).toBe("Renamed");
    expectJsonHeaders(res);
  });

  it("a body of exactly 64 KiB is accepted", async () => {
    const { key, project } = await fixture();
    const res = await h.call("PATCH", `/api/v1/projects/${project.id}`, {
      key,
      rawBody: patchBodyOfSize(BODY_LIMIT, "Exactly 64 KiB"),
      headers: { "content-type": "application/json" },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body.name).toBe("Exactly 64 KiB");
  });

  it("a body of 64 KiB + 1 byte is a 413 payload_too_large and changes nothing", async () => {
    const { key, project } = await fixture();
    const res = await h.call("PATCH", `/api/v1/projects/${project.id}`, {
      key,
      rawBody: patchBodyOfSize(BODY_LIMIT + 1, "Too big"),
      headers: { "content-type": "application/json" },
    });
    expectEnvelope(res, 413, "payload_too_large");
    expect((await h.get(`/api/v1/projects/${project.id}`, key)).body.name).toBe("Original");
  });

  it("an oversized body announced by Content-Length is a 413", async () => {
    const { key, project } = await fixture();
    const body = patchBodyOfSize(BODY_LIMIT + 1000, "Too big");
    const res = await h.call("PATCH", `/api/v1/projects/${project.id}`, {
      key,
      rawBody: body,
      headers: { "content-type": "application/json", "content-length": String(body.length) },
    });
    expectEnvelope(res, 413, "payload_too_large");
  });

  it("an oversized chunked body (no Content-Length) is a 413 and changes nothing", async () => {
    const { key, project } = await fixture();
    const res = await sendStream("PATCH", `/api/v1/projects/${project.id}`, key, chunkedBody(patchBodyOfSize(BODY_LIMIT + 1, "Too big")));
    expectEnvelope(res, 413, "payload_too_large");
    const huge = await sendStream(
      "PATCH",
      `/api/v1/projects/${project.id}`,
      key,
      chunkedBody(patchBodyOfSize(4 * 1024 * 1024, "Huge"), 64 * 1024),
    );
    expectEnvelope(huge, 413, "payload_too_large");
    expect((await h.get(`/api/v1/projects/${project.id}`, key)).body.name).toBe("Original");
  });

  it("a chunked body within the limit works (exactly 64 KiB, and small)", async () => {
    const { key, project } = await fixture();
    const exact = await sendStream(
      "PATCH",
      `/api/v1/projects/${project.id}`,
      key,
      chunkedBody(patchBodyOfSize(BODY_LIMIT, "Chunked 64 KiB"), 1000),
    );
    expect(exact.status, exact.text).toBe(200);
    expect(exact.body.name).toBe("Chunked 64 KiB");
    const small = await sendStream(
      "PATCH",
      `/api/v1/projects/${project.id}`,
      key,
      chunkedBody(JSON.stringify({ name: "Chunked small" }), 3),
    );
    expect(small.status, small.text).toBe(200);
    expect(small.body.name).toBe("Chunked small");
  });

  it("an oversized body on POST /alerts/:id/snooze is a 413, plain or chunked", async () => {
    const { key, alertId } = await fixture();
    const big = JSON.stringify({ duration: "1h", pad: "x".repeat(BODY_LIMIT) });
    expectEnvelope(
      await h.call("POST", `/api/v1/alerts/${alertId}/snooze`, { key, rawBody: big, headers: { "content-type": "application/json" } }),
      413,
      "payload_too_large",
    );
    expectEnvelope(await sendStream("POST", `/api/v1/alerts/${alertId}/snooze`, key, chunkedBody(big)), 413, "payload_too_large");
    expect((await h.get(`/api/v1/alerts/${alertId}`, key)).body.snoozed).toBe(false);
  });
});

describe("unexpected faults", () => {
  it("is a 500 internal_error with a generic message; the details go to the log only", async () => {
    const { apiKey } = await faulty.newOrganization("Faulty");
    const logsBefore = faulty.logs.length;
    const res = await faulty.get("/api/v1/projects", apiKey);
    expectEnvelope(res, 500, "internal_error");
    expect(res.text).not.toContain("boom");
    expect(res.text).not.toContain("secret-detail");
    expect(res.text).not.toMatch(/\bat\s+\S+\s+\(|\.ts:\d+/); // no stack trace
    expect(res.body.error.details).toBeUndefined();

    const newLogs = faulty.logs.slice(logsBefore);
    const entry = newLogs.find((line) => line.includes("boom-secret-detail"));
    expect(entry, JSON.stringify(newLogs)).toBeDefined();
    const parsed = JSON.parse(entry!);
    expect(parsed.path).toBe("/api/v1/projects");
    expect(parsed.method).toBe("GET");
    // The log line can be matched to the response, and never holds the API key.
    expect(res.headers.get("request-id")).toBeTruthy();
    expect(parsed.requestId).toBe(res.headers.get("request-id"));
    expect(entry).not.toContain(apiKey);
  });
});

describe("content type and nosniff on every response", () => {
  it("successes: GET single, GET list, PATCH, POST action, the OpenAPI document", async () => {
    const { key, project, alertId } = await fixture();
    const responses = [
      await h.get("/api/v1/organization", key),
      await h.get("/api/v1/projects", key),
      await h.get(`/api/v1/alerts/${alertId}/events`, key),
      await h.patch(`/api/v1/projects/${project.id}`, key, { description: "new" }),
      await h.post(`/api/v1/alerts/${alertId}/snooze`, key, { duration: "1h" }),
      await h.post(`/api/v1/alerts/${alertId}/unsnooze`, key),
      await h.get("/api/v1/openapi.json", null),
    ];
    for (const res of responses) {
      expect(res.status, res.text).toBe(200);
      expectJsonHeaders(res);
    }
  });

  it("every error kind: 400, 401, 404, 405, 413, 422, 429, 500", async () => {
    const { key, project, alertId } = await fixture();
    expectEnvelope(await h.get("/api/v1/projects?limit=0", key), 400, "invalid_request");
    expectEnvelope(await h.get("/api/v1/alerts?status=bogus", key), 400, "invalid_request");
    expectEnvelope(await h.get("/api/v1/projects?cursor=nope", key), 400, "invalid_request");
    expectEnvelope(await h.patch(`/api/v1/projects/${project.id}`, key, { unknown: 1 }), 400, "invalid_request");
    expectEnvelope(await h.get("/api/v1/projects", null), 401, "unauthorized");
    expectEnvelope(await h.get("/api/v1/projects", "cta_not_a_real_key"), 401, "unauthorized");
    expectEnvelope(await h.get(`/api/v1/projects/${UNKNOWN_UUID}`, key), 404, "not_found");
    expectEnvelope(await h.get("/api/v1/projects/not-a-uuid", key), 404, "not_found");
    expectEnvelope(await h.get("/nope", null), 404, "not_found");
    expectEnvelope(await h.call("DELETE", "/api/v1/projects", { key }), 405, "method_not_allowed");
    expectEnvelope(
      await h.call("PATCH", `/api/v1/projects/${project.id}`, {
        key,
        rawBody: patchBodyOfSize(BODY_LIMIT + 1, "x"),
        headers: { "content-type": "application/json" },
      }),
      413,
      "payload_too_large",
    );
    expectEnvelope(await h.patch(`/api/v1/projects/${project.id}`, key, { name: " " }), 422, "validation_failed");
    expectEnvelope(await h.post(`/api/v1/alerts/${alertId}/snooze`, key, {}), 422, "validation_failed");

    const { apiKey: limitedKey } = await limited.newOrganization("Limited");
    expect((await limited.get("/api/v1/organization", limitedKey)).status).toBe(200);
    expectEnvelope(await limited.get("/api/v1/organization", limitedKey), 429, "rate_limited");

    const { apiKey: faultyKey } = await faulty.newOrganization("Faulty");
    expectEnvelope(await faulty.get("/api/v1/organization", faultyKey), 500, "internal_error");
  });

  it("a request with an Accept header asking for something else still gets JSON with nosniff", async () => {
    const { key } = await fixture();
    const res = await h.call("GET", "/api/v1/projects", { key, headers: { accept: "text/html" } });
    expect(res.status).toBe(200);
    expectJsonHeaders(res);
    // Under an API's prefix; outside them a browser's `text/html` gets the pages' HTML 404 (above).
    const missing = await h.call("GET", "/api/v1/nope", { key, headers: { accept: "text/html" } });
    expectEnvelope(missing, 404, "not_found");
  });
});
