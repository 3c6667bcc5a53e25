import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, createHarness } from "../../support/harness";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

describe("GET /organization", () => {
  it("returns the organization of the key and describes the key used, without its value", async () => {
    const { organization, apiKey, apiKeyObject } = await h.newOrganization("Acme CI", "Europe/Berlin");
    const res = await h.get("/api/v1/organization", apiKey);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      id: organization.id,
      name: "Acme CI",
      time_zone: "Europe/Berlin",
      created_at: organization.created_at,
      api_key: { id: apiKeyObject.id, name: apiKeyObject.name, created_at: apiKeyObject.created_at },
    });
    expect(res.text).not.toContain(apiKey);
    expect(new Date(res.body.created_at).toISOString()).toBe(res.body.created_at);
  });

  it("describes the new key after regeneration", async () => {
    const { organization, apiKey } = await h.newOrganization();
    const regenerated = await h.admin("POST", `/organizations/${organization.id}/api_key/regenerate`);
    expect(regenerated.status).toBe(200);
    const res = await h.get("/api/v1/organization", regenerated.body.api_key.secret);
    expect(res.status).toBe(200);
    expect(res.body.api_key.id).toBe(regenerated.body.api_key.id);
    expect((await h.get("/api/v1/organization", apiKey)).status).toBe(401);
  });
});
