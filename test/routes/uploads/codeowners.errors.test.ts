/**
 * PUT /uploads/v1/codeowners, what is refused (docs/codeowners.md): too large (413, as for
 * reports), another media type, charset or a Content-Encoding (415), bytes that are not UTF-8 text
 * (400), another method (405). A refused file changes nothing: the stored one and the owners stay.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, createHarness } from "../../support/harness";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

const PATH = "/uploads/v1/codeowners";
const LIMIT = 3 * 1024 * 1024;

async function projectWithOwners() {
  const { organization, apiKey } = await h.newOrganization();
  const { project, uploadToken } = await h.newProject(organization.id);
  h.clock.advance(60_000);
  await h.newRun(project.id, {
    meta: { branch: "main" },
    report: { suites: [{ name: "s", cases: [{ name: "a", file: "src/a.test.ts", status: "passed" }] }] },
  });
  const put = await h.call("PUT", PATH, { key: uploadToken, headers: { "content-type": "text/plain" }, rawBody: "* @acme/core\n" });
  expect(put.status).toBe(200);
  const owners = async () => (await h.get(`/api/v1/projects/${project.id}/tests`, apiKey)).body.data[0].owners;
  return { uploadToken, owners };
}

const put = (token: string, rawBody: string | Uint8Array, headers: Record<string, string> = { "content-type": "text/plain" }) =>
  h.call("PUT", PATH, { key: token, headers, rawBody });

describe("refused", () => {
  it("a file over 3 MiB is a 413 in the envelope; exactly 3 MiB is accepted", async () => {
    const { uploadToken, owners } = await projectWithOwners();
    const line = "/x/ @acme/x\n";
    const big = line.repeat(Math.floor(LIMIT / line.length)) + "#".repeat(LIMIT % line.length);
    expect(big.length).toBe(LIMIT);
    const tooBig = await put(uploadToken, `${big}#`);
    expect(tooBig.status).toBe(413);
    expect(tooBig.body.error.code).toBe("payload_too_large");
    expect(tooBig.body.error.message).toContain("3145728 bytes");
    expect(await owners()).toEqual(["@acme/core"]);
    // Chunked, without a Content-Length: counted while streamed.
    const bytes = new TextEncoder().encode(`${big}#`);
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < bytes.length; i += 65_536) controller.enqueue(bytes.subarray(i, i + 65_536));
        controller.close();
      },
    });
    const chunked = await h.call("PUT", PATH, { key: uploadToken, headers: { "content-type": "text/plain" }, rawBody: stream });
    expect(chunked.status).toBe(413);
    const atLimit = await put(uploadToken, big);
    expect(atLimit.status, atLimit.text).toBe(200);
    expect(atLimit.body.rules_count).toBe(Math.floor(LIMIT / line.length));
    expect(await owners()).toEqual([]);
  });

  it("another Content-Type, a charset other than UTF-8, or a Content-Encoding: 415", async () => {
    const { uploadToken, owners } = await projectWithOwners();
    const cases: Record<string, string>[] = [
      { "content-type": "application/json" },
      { "content-type": "application/octet-stream" },
      { "content-type": "text/markdown" },
      { "content-type": "text/plain; charset=latin1" },
      { "content-type": "text/plain", "content-encoding": "gzip" },
      {}, // none
    ];
    for (const headers of cases) {
      // Bytes, not a string: fetch would label a string text/plain itself.
      const res = await put(uploadToken, new TextEncoder().encode("* @acme/other\n"), headers);
      expect(res.status, JSON.stringify(headers)).toBe(415);
      expect(res.body.error.code).toBe("unsupported_media_type");
    }
    expect(await owners()).toEqual(["@acme/core"]);
    for (const contentType of ["TEXT/PLAIN", "text/plain; charset=utf-8", 'text/plain;charset="UTF-8"', "text/plain; charset=us-ascii"]) {
      expect((await put(uploadToken, "* @acme/core\n", { "content-type": contentType })).status, contentType).toBe(200);
    }
  });

  it("bytes that are not UTF-8, or a NUL character: 400", async () => {
    const { uploadToken, owners } = await projectWithOwners();
    const latin1 = new Uint8Array([0x2a, 0x20, 0x40, 0x63, 0x61, 0x66, 0xe9, 0x0a]);
    const invalid = await put(uploadToken, latin1);
    expect(invalid.status).toBe(400);
    expect(invalid.body.error).toMatchObject({ code: "invalid_request", message: "The body is not valid UTF-8 text." });
    const nul = await put(uploadToken, "* @acme/x\u0000\n");
    expect(nul.status).toBe(400);
    expect(nul.body.error.code).toBe("invalid_request");
    expect(await owners()).toEqual(["@acme/core"]);
  });

  it("another method is a 405 naming PUT, whatever its body", async () => {
    const { uploadToken } = await projectWithOwners();
    for (const method of ["GET", "POST", "PATCH", "DELETE"]) {
      const res = await h.call(method, PATH, {
        key: uploadToken,
        ...(method === "GET" ? {} : { headers: { "content-type": "text/plain" }, rawBody: "x".repeat(LIMIT + 10) }),
      });
      expect(res.status, method).toBe(405);
      expect(res.headers.get("allow")).toBe("PUT");
    }
  });
});
