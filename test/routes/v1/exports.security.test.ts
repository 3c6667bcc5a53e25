/**
 * The bulk exports' security: another organization's project is the same 404 as an unknown one
 * (and its rows never show up), and what came with an upload (a case's name, classname, file, a
 * run's branch) stays a JSON string on its own line: a script stays inert text and a newline in
 * a name cannot forge a line of its own.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, createHarness } from "../../support/harness";

let h: Harness;
let ours: { key: string; projectId: string };
let theirs: { key: string; projectId: string };
let since: string;
let until: string;
const UNKNOWN_UUID = "7d3e2f1a-0b9c-4d8e-9f7a-6b5c4d3e2f1a";
const SCRIPT = `</script><script>alert("x")</script>`;
const FORGED_LINE = `ok"}\n{"test_case_id":1,"name":"forged"}\n`;

beforeAll(async () => {
  h = await createHarness();
  const a = await h.newOrganization("Export security A");
  const b = await h.newOrganization("Export security B");
  ours = { key: a.apiKey, projectId: (await h.newProject(a.organization.id, "ours")).project.id };
  theirs = { key: b.apiKey, projectId: (await h.newProject(b.organization.id, "theirs")).project.id };
  since = h.clock.now().toISOString();
  h.clock.advance(1_000);
  await h.newRun(ours.projectId, {
    meta: { branch: `feature/${SCRIPT}` },
    report: {
      suites: [
        {
          name: SCRIPT,
          cases: [
            { name: SCRIPT, classname: `<img src=x onerror=alert(1)>`, file: `a\u2028b.ts`, status: "failed", failureMessage: SCRIPT },
            { name: FORGED_LINE, status: "passed" },
          ],
        },
      ],
    },
  });
  await h.newRun(theirs.projectId, { report: { suites: [{ name: "theirs", cases: [{ name: "their case", status: "passed" }] }] } });
  h.clock.advance(1_000);
  until = h.clock.now().toISOString();
});
afterAll(() => h.close());

const exportPath = (resource: string, projectId: string) =>
  `/api/v1/projects/${projectId}/exports/${resource}?since=${encodeURIComponent(since)}&until=${encodeURIComponent(until)}`;

describe.each(["test_runs", "test_cases"])("GET /projects/:id/exports/%s", (resource) => {
  it("another organization's project is the same 404 as an unknown one", async () => {
    const foreign = await h.get(exportPath(resource, theirs.projectId), ours.key);
    const unknown = await h.get(exportPath(resource, UNKNOWN_UUID), ours.key);
    expect(foreign.status).toBe(404);
    expect(foreign.body).toEqual(unknown.body);
    expect(foreign.text).not.toContain("their");
    // Their key reads their project, and nothing of ours.
    const theirOwn = await h.get(exportPath(resource, theirs.projectId), theirs.key);
    expect(theirOwn.status).toBe(200);
    expect(theirOwn.text).not.toContain("script");
  });

  it("is served as NDJSON with nosniff and no-store: never rendered, never cached", async () => {
    const res = await h.get(exportPath(resource, ours.projectId), ours.key);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/x-ndjson");
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(res.headers.get("cache-control")).toBe("no-store");
  });
});

describe("uploaded text in the export", () => {
  it("stays a JSON string on its line: scripts are text, a newline in a name is escaped, no line is forged", async () => {
    const res = await h.get(exportPath("test_cases", ours.projectId), ours.key);
    const rawLines = res.text.slice(0, -1).split("\n");
    expect(rawLines.length).toBe(2);
    const lines = rawLines.map((line) => JSON.parse(line));
    expect(lines.map((line) => line.name)).toEqual([SCRIPT, FORGED_LINE]);
    expect(lines[0].classname).toBe(`<img src=x onerror=alert(1)>`);
    expect(lines[0].file).toBe(`a\u2028b.ts`);
    expect(lines[0].branch).toBe(`feature/${SCRIPT}`);
    expect(lines.some((line) => line.name === "forged")).toBe(false);
    expect(rawLines[1]).toContain(String.raw`ok\"}\n{\"test_case_id\":1,\"name\":\"forged\"}\n`);
  });

  it("a run's branch stays a string in the test_runs export", async () => {
    const res = await h.get(exportPath("test_runs", ours.projectId), ours.key);
    const rawLines = res.text.slice(0, -1).split("\n");
    expect(rawLines.length).toBe(1);
    expect(JSON.parse(rawLines[0]!).branch).toBe(`feature/${SCRIPT}`);
  });
});
