import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CallResult, type Harness, createHarness } from "../../support/harness";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

const UNKNOWN_UUID = "6f1c2d3e-4b5a-4c6d-8e7f-0a1b2c3d4e5f";

function expectError(res: CallResult, status: number, code: string) {
  expect(res.status, res.text).toBe(status);
  expect(res.body).toBeTypeOf("object");
  expect(res.body.error.code).toBe(code);
  expect(typeof res.body.error.message).toBe("string");
  expect(res.body.error.message.length).toBeGreaterThan(0);
  expect(Object.keys(res.body)).toEqual(["error"]);
}

function expectValidationFailed(res: CallResult, details: { field: string; message: string }[]) {
  expectError(res, 422, "validation_failed");
  expect(res.body.error.details).toEqual(details);
}

/** A project and the exact object GET returns for it, to check that failed requests change nothing. */
async function fixture() {
  const { organization, apiKey } = await h.newOrganization();
  const { project } = await h.newProject(organization.id, "Original name", "Original description");
  h.clock.advance(60_000);
  const before = (await h.get(`/api/v1/projects/${project.id}`, apiKey)).body;
  return { organization, apiKey, project, before, path: `/api/v1/projects/${project.id}` };
}

async function expectUnchanged(apiKey: string, id: string, before: unknown) {
  const after = await h.get(`/api/v1/projects/${id}`, apiKey);
  expect(after.status).toBe(200);
  expect(after.body).toEqual(before);
}

describe("PATCH /projects/:id rejects a blank name", () => {
  for (const name of ["", "   ", "\t\n "]) {
    it(`name ${JSON.stringify(name)} → 422 validation_failed with exactly the name detail, and nothing changes`, async () => {
      const { apiKey, project, before, path } = await fixture();
      const res = await h.patch(path, apiKey, { name });
      expectValidationFailed(res, [{ field: "name", message: "can't be blank" }]);
      await expectUnchanged(apiKey, project.id, before);
    });
  }

  it("name null → 422 validation_failed on name", async () => {
    const { apiKey, project, before, path } = await fixture();
    const res = await h.patch(path, apiKey, { name: null });
    expectError(res, 422, "validation_failed");
    expect(res.body.error.details).toHaveLength(1);
    expect(res.body.error.details[0].field).toBe("name");
    expect(typeof res.body.error.details[0].message).toBe("string");
    await expectUnchanged(apiKey, project.id, before);
  });

  for (const name of [123, true, ["x"], { first: "x" }]) {
    it(`name ${JSON.stringify(name)} (not a string) → 422 validation_failed on name`, async () => {
      const { apiKey, project, before, path } = await fixture();
      const res = await h.patch(path, apiKey, { name });
      expectError(res, 422, "validation_failed");
      expect(res.body.error.details.map((d: any) => d.field)).toEqual(["name"]);
      expect(typeof res.body.error.details[0].message).toBe("string");
      await expectUnchanged(apiKey, project.id, before);
    });
  }

  it("a blank name with a valid description changes neither field", async () => {
    const { apiKey, project, before, path } = await fixture();
    const res = await h.patch(path, apiKey, { name: "  ", description: "would be new" });
    expectValidationFailed(res, [{ field: "name", message: "can't be blank" }]);
    await expectUnchanged(apiKey, project.id, before);
  });

  it("a description that is not a string or null → 422 validation_failed on description", async () => {
    const { apiKey, project, before, path } = await fixture();
    const res = await h.patch(path, apiKey, { description: 42 });
    expectError(res, 422, "validation_failed");
    expect(res.body.error.details.map((d: any) => d.field)).toEqual(["description"]);
    await expectUnchanged(apiKey, project.id, before);
  });

  it("reports both fields when both are rejected", async () => {
    const { apiKey, project, before, path } = await fixture();
    const res = await h.patch(path, apiKey, { name: "", description: 42 });
    expectError(res, 422, "validation_failed");
    expect(res.body.error.details.map((d: any) => d.field).sort()).toEqual(["description", "name"]);
    expect(res.body.error.details).toContainEqual({ field: "name", message: "can't be blank" });
    await expectUnchanged(apiKey, project.id, before);
  });
});

describe("PATCH /projects/:id with no recognized fields", () => {
  it("{} → 400 invalid_request", async () => {
    const { apiKey, project, before, path } = await fixture();
    expectError(await h.patch(path, apiKey, {}), 400, "invalid_request");
    await expectUnchanged(apiKey, project.id, before);
  });

  it('{"foo":1} → 400 invalid_request', async () => {
    const { apiKey, project, before, path } = await fixture();
    expectError(await h.patch(path, apiKey, { foo: 1 }), 400, "invalid_request");
    await expectUnchanged(apiKey, project.id, before);
  });

  it("only read-only fields → 400 invalid_request", async () => {
    const { apiKey, project, before, path } = await fixture();
    expectError(
      await h.patch(path, apiKey, { id: UNKNOWN_UUID, test_runs_count: 5, created_at: "2000-01-01T00:00:00Z" }),
      400,
      "invalid_request",
    );
    await expectUnchanged(apiKey, project.id, before);
  });

  it("an empty body → 400", async () => {
    const { apiKey, project, before, path } = await fixture();
    const res = await h.call("PATCH", path, { key: apiKey, headers: { "content-type": "application/json" } });
    expectError(res, 400, "invalid_request");
    await expectUnchanged(apiKey, project.id, before);
  });

  it("an empty body with no content-type → 400", async () => {
    const { apiKey, project, before, path } = await fixture();
    const res = await h.call("PATCH", path, { key: apiKey });
    expectError(res, 400, "invalid_request");
    await expectUnchanged(apiKey, project.id, before);
  });
});

describe("PATCH /projects/:id with a body that is not a JSON object", () => {
  const cases: [string, string][] = [
    ["a JSON array", '[{"name":"x"}]'],
    ["an empty JSON array", "[]"],
    ["a JSON string", '"name"'],
    ["a JSON number", "42"],
    ["JSON null", "null"],
    ["malformed JSON", '{"name": "x"'],
    ["malformed JSON (single quotes)", "{'name': 'x'}"],
    ["malformed JSON (trailing comma)", '{"name": "x",}'],
    ["plain text", "name=x"],
  ];
  for (const [label, raw] of cases) {
    it(`${label} → 400 invalid_request, nothing changes`, async () => {
      const { apiKey, project, before, path } = await fixture();
      const res = await h.call("PATCH", path, { key: apiKey, rawBody: raw, headers: { "content-type": "application/json" } });
      expectError(res, 400, "invalid_request");
      await expectUnchanged(apiKey, project.id, before);
    });
  }
});

describe("PATCH /projects/:id reads JSON without a JSON content-type (documented leniency)", () => {
  it("content-type application/x-www-form-urlencoded with JSON text (curl -d) is read as JSON", async () => {
    const { apiKey, path } = await fixture();
    const res = await h.call("PATCH", path, {
      key: apiKey,
      rawBody: JSON.stringify({ name: "From curl", description: "" }),
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body.name).toBe("From curl");
    expect(res.body.description).toBeNull();
    expect((await h.get(path, apiKey)).body.name).toBe("From curl");
  });

  it("no content-type header at all is read as JSON", async () => {
    const { apiKey, path } = await fixture();
    const res = await h.call("PATCH", path, { key: apiKey, rawBody: new TextEncoder().encode(JSON.stringify({ name: "No type" })) });
    expect(res.status, res.text).toBe(200);
    expect(res.body.name).toBe("No type");
  });

  it("the same validation applies: blank name → 422 with exactly the name detail", async () => {
    const { apiKey, project, before, path } = await fixture();
    const res = await h.call("PATCH", path, {
      key: apiKey,
      rawBody: JSON.stringify({ name: " " }),
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    expectValidationFailed(res, [{ field: "name", message: "can't be blank" }]);
    await expectUnchanged(apiKey, project.id, before);
  });

  it("application/json; charset=utf-8 is accepted", async () => {
    const { apiKey, path } = await fixture();
    const res = await h.call("PATCH", path, {
      key: apiKey,
      rawBody: JSON.stringify({ description: "charset" }),
      headers: { "content-type": "application/json; charset=utf-8" },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body.description).toBe("charset");
  });
});

describe("unknown, malformed and foreign project ids", () => {
  const malformed = [
    "abc",
    "1",
    "0",
    "6f1c2d3e-4b5a-4c6d-8e7f-0a1b2c3d4e5",
    "6f1c2d3e4b5a4c6d8e7f0a1b2c3d4e5f",
    "6f1c2d3e-4b5a-4c6d-8e7f-0a1b2c3d4e5z",
  ];

  it("GET an unknown uuid → 404 not_found", async () => {
    const { apiKey } = await h.newOrganization();
    expectError(await h.get(`/api/v1/projects/${UNKNOWN_UUID}`, apiKey), 404, "not_found");
  });

  it("PATCH an unknown uuid → 404 not_found", async () => {
    const { apiKey } = await h.newOrganization();
    expectError(await h.patch(`/api/v1/projects/${UNKNOWN_UUID}`, apiKey, { name: "x" }), 404, "not_found");
  });

  for (const id of malformed) {
    it(`GET and PATCH malformed id ${JSON.stringify(id)} → 404 not_found`, async () => {
      const { apiKey } = await h.newOrganization();
      expectError(await h.get(`/api/v1/projects/${id}`, apiKey), 404, "not_found");
      expectError(await h.patch(`/api/v1/projects/${id}`, apiKey, { name: "x" }), 404, "not_found");
    });
  }

  it("a project of another organization is 404 not_found on GET, and PATCH leaves it unchanged", async () => {
    const owner = await fixture();
    const stranger = await h.newOrganization("Stranger");
    const get = await h.get(owner.path, stranger.apiKey);
    expectError(get, 404, "not_found");
    const patch = await h.patch(owner.path, stranger.apiKey, { name: "Hijacked", description: "" });
    expectError(patch, 404, "not_found");
    // Indistinguishable from a missing project.
    const missing = await h.get(`/api/v1/projects/${UNKNOWN_UUID}`, stranger.apiKey);
    expect(get.body.error.code).toBe(missing.body.error.code);
    expect(get.body.error.message).toBe(missing.body.error.message);
    await expectUnchanged(owner.apiKey, owner.project.id, owner.before);
  });

  it("a foreign project does not appear in the caller's list", async () => {
    const owner = await fixture();
    const stranger = await h.newOrganization("Stranger");
    const list = await h.get("/api/v1/projects", stranger.apiKey);
    expect(list.status).toBe(200);
    expect(list.body.data.map((p: any) => p.id)).not.toContain(owner.project.id);
  });

  it("an invalid body on an unknown project is still rejected without creating or changing anything", async () => {
    const { apiKey, project, before } = await fixture();
    const res = await h.patch(`/api/v1/projects/${UNKNOWN_UUID}`, apiKey, { name: "" });
    expect([404, 422]).toContain(res.status);
    await expectUnchanged(apiKey, project.id, before);
    expect((await h.get("/api/v1/projects", apiKey)).body.data).toHaveLength(1);
  });
});

describe("authentication on project endpoints", () => {
  it("no key → 401 unauthorized on GET list, GET one and PATCH, and nothing changes", async () => {
    const { apiKey, project, before, path } = await fixture();
    expectError(await h.get("/api/v1/projects", null), 401, "unauthorized");
    expectError(await h.get(path, null), 401, "unauthorized");
    expectError(await h.patch(path, null, { name: "x" }), 401, "unauthorized");
    await expectUnchanged(apiKey, project.id, before);
  });
});

describe("bad list parameters", () => {
  for (const limit of ["0", "-1", "abc", "1.5"]) {
    it(`limit=${limit} → 400 invalid_request`, async () => {
      const { apiKey } = await h.newOrganization();
      expectError(await h.get(`/api/v1/projects?limit=${limit}`, apiKey), 400, "invalid_request");
    });
  }

  it("an edited cursor → 400 invalid_request", async () => {
    const { organization, apiKey } = await h.newOrganization();
    await h.newProject(organization.id, "a");
    h.clock.advance(1000);
    await h.newProject(organization.id, "b");
    const first = await h.get("/api/v1/projects?limit=1", apiKey);
    const cursor: string = first.body.pagination.next_cursor;
    expect(typeof cursor).toBe("string");
    const edited = `${cursor.slice(0, -2)}${cursor.at(-2) === "A" ? "B" : "A"}${cursor.slice(-1)}`;
    expect(edited).not.toBe(cursor);
    expectError(await h.get(`/api/v1/projects?limit=1&cursor=${encodeURIComponent(edited)}`, apiKey), 400, "invalid_request");
    expectError(await h.get("/api/v1/projects?cursor=garbage", apiKey), 400, "invalid_request");
  });
});

describe("PATCH /projects/:id with text Postgres cannot store", () => {
  it("rejects a NUL character in name or description with 422, not a 500, and changes nothing", async () => {
    const { apiKey, project, before, path } = await fixture();
    expectValidationFailed(await h.patch(path, apiKey, { name: "bad\u0000name" }), [
      { field: "name", message: "must not contain NUL characters" },
    ]);
    expectValidationFailed(await h.patch(path, apiKey, { description: "bad\u0000text" }), [
      { field: "description", message: "must not contain NUL characters" },
    ]);
    await expectUnchanged(apiKey, project.id, before);
  });
});
