/**
 * What Node's HTTP layer refuses before the app (src/node/http-server.ts), over raw TCP against
 * the real `npm start` server: answered in the error envelope with a Request-Id, the connection
 * closed; and absolute URLs from PUBLIC_BASE_URL whatever Host a request names.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { connect } from "node:net";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../..", import.meta.url));
const PUBLIC_BASE_URL = "https://api.public-base.test";
let child: ChildProcess;
let port: number;

beforeAll(async () => {
  child = spawn(process.execPath, ["--import", "tsx", "src/node/server.ts"], {
    cwd: root,
    env: {
      ...process.env,
      PORT: "0",
      HOST: "127.0.0.1",
      DATABASE_URL: "memory://",
      SEED_DEMO: "false",
      ADMIN_TOKEN: "raw-http-admin-token-123",
      PUBLIC_BASE_URL,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  port = await new Promise<number>((resolve, reject) => {
    let output = "";
    const timer = setTimeout(() => reject(new Error(`the server did not start:\n${output}`)), 90_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /listening on http:\/\/localhost:(\d+)/.exec(output);
      if (match && /Admin API enabled/.test(output)) {
        clearTimeout(timer);
        resolve(Number(match[1]));
      }
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    child.on("exit", (code) => reject(new Error(`the server exited with ${code}:\n${output}`)));
  });
});
afterAll(() => {
  child?.kill("SIGTERM");
});

type RawAnswer = { status: number; headers: Record<string, string>; body: string; closed: boolean };

/** Sends `text` as is and reads the answer until the server closes the connection (or 5 s pass). */
function raw(text: string | Buffer): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    const chunks: Buffer[] = [];
    let closed = false;
    const timer = setTimeout(() => socket.destroy(), 5_000);
    socket.on("data", (chunk) => chunks.push(chunk));
    socket.on("end", () => (closed = true));
    socket.on("error", reject);
    socket.on("close", () => {
      clearTimeout(timer);
      const response = Buffer.concat(chunks).toString("latin1");
      const split = response.indexOf("\r\n\r\n");
      if (split < 0) return reject(new Error(`no HTTP answer: ${JSON.stringify(response)}`));
      const [statusLine, ...lines] = response.slice(0, split).split("\r\n");
      const headers = Object.fromEntries(
        lines.map((line) => [line.slice(0, line.indexOf(":")).toLowerCase(), line.slice(line.indexOf(":") + 1).trim()]),
      );
      resolve({
        status: Number(statusLine!.split(" ")[1]),
        headers,
        body: Buffer.from(response.slice(split + 4), "latin1").toString("utf8"),
        closed,
      });
    });
    socket.write(text);
  });
}

function expectEnvelope(answer: RawAnswer, status: number, code: string) {
  expect(answer.status, answer.body).toBe(status);
  expect(answer.headers["content-type"]).toBe("application/json; charset=utf-8");
  expect(answer.headers["request-id"]).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  expect(answer.headers["x-content-type-options"]).toBe("nosniff");
  const body = JSON.parse(answer.body);
  expect(Object.keys(body)).toEqual(["error"]);
  expect(body.error.code).toBe(code);
  expect(body.error.message.length).toBeGreaterThan(0);
  if (answer.headers["content-length"] !== undefined) expect(Number(answer.headers["content-length"])).toBe(Buffer.byteLength(answer.body));
}

const get = (path: string, headers = "Host: localhost\r\n") => `GET ${path} HTTP/1.1\r\n${headers}Connection: close\r\n\r\n`;

describe("requests Node's HTTP parser refuses, answered in the envelope", () => {
  it("a control character in a header value or name: 400 invalid_request, Connection: close", async () => {
    for (const header of ["X-Test: a\u0001b\r\n", "X-Te\u0007st: a\r\n", "X-Test: a\u0000b\r\n"]) {
      const answer = await raw(get("/api/v1/openapi.json", `Host: localhost\r\n${header}`));
      expectEnvelope(answer, 400, "invalid_request");
      expect(answer.headers.connection).toBe("close");
      expect(answer.closed).toBe(true);
    }
  });

  it.each(["get", "FOO", "Post", "G\u0000T"])("method %j: 400 invalid_request", async (method) => {
    const answer = await raw(`${method} /api/v1/openapi.json HTTP/1.1\r\nHost: localhost\r\n\r\n`);
    expectEnvelope(answer, 400, "invalid_request");
    expect(JSON.parse(answer.body).error.message).toMatch(/method/);
  });

  it("a request head over 16 KiB: 431 request_header_fields_too_large", async () => {
    const answer = await raw(get("/api/v1/openapi.json", `Host: localhost\r\nX-Big: ${"x".repeat(17 * 1024)}\r\n`));
    expectEnvelope(answer, 431, "request_header_fields_too_large");
    expect(answer.headers.connection).toBe("close");
  });

  it("CONNECT gets an answer: 400 invalid_request, and the connection is closed", async () => {
    const answer = await raw("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n");
    expectEnvelope(answer, 400, "invalid_request");
    expect(JSON.parse(answer.body).error.message).toMatch(/CONNECT/);
    expect(answer.closed).toBe(true);
  });

  it("a Host that is not a host name, or none at all: 400 invalid_request", async () => {
    for (const headers of ["Host: exa mple.com\r\n", "Host: user@evil.test\r\n", "Host: a/b\r\n", ""]) {
      const answer = await raw(get("/api/v1/openapi.json", headers));
      expectEnvelope(answer, 400, "invalid_request");
      expect(JSON.parse(answer.body).error.message, headers).toMatch(/Host/);
    }
  });

  it("malformed framing: both Content-Length and chunked, or a bad chunk size", async () => {
    const both = await raw(
      "POST /api/v1/projects HTTP/1.1\r\nHost: localhost\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    );
    expectEnvelope(both, 400, "invalid_request");
    const badChunk = await raw(
      "POST /api/v1/projects HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nxx\r\n0\r\n\r\n",
    );
    expect(badChunk.status).toBeLessThan(500);
    expect(JSON.parse(badChunk.body).error.code).toMatch(/invalid_request|unauthorized/);
  });
});

describe("requests that reach the app", () => {
  it("a well-formed request is answered by the app, with its headers", async () => {
    const answer = await raw(get("/nope"));
    expectEnvelope(answer, 404, "not_found");
  });

  it("an Expect other than 100-continue is ignored, not a bare 417", async () => {
    const answer = await raw(get("/api/v1/openapi.json", "Host: localhost\r\nExpect: something-else\r\n"));
    expect(answer.status).toBe(200);
  });

  it("a forged Host header does not change the absolute URLs: they come from PUBLIC_BASE_URL", async () => {
    for (const path of ["/api/v1/openapi.json", "/uploads/v1/openapi.json"]) {
      const answer = await raw(get(path, "Host: evil.example\r\nX-Forwarded-Host: evil2.example\r\n"));
      expect(answer.status).toBe(200);
      const document = JSON.parse(answer.body);
      expect(document.servers[0].url.startsWith(`${PUBLIC_BASE_URL}/`)).toBe(true);
      expect(answer.body).not.toContain("evil");
    }
    const absolute = await raw(
      `GET http://evil.example/admin/v1/openapi.json HTTP/1.1\r\nHost: evil.example\r\nAuthorization: Bearer raw-http-admin-token-123\r\nConnection: close\r\n\r\n`,
    );
    expect(absolute.status).toBe(200);
    expect(JSON.parse(absolute.body).servers).toEqual([{ url: `${PUBLIC_BASE_URL}/admin/v1` }]);
  });
});
