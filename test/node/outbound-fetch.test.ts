/**
 * Outbound requests on Node (src/node/outbound-fetch.ts), against real local receivers: the
 * default policy reaches no loopback receiver whatever the spelling (or a public-looking name that
 * resolves to loopback); an allowed host is reached with its name in the Host header; and each
 * connection resolves its host once and dials the address it checked, so a resolver that changes
 * its answer (DNS rebinding) never gets a connection to the address it turns to.
 */
import { type Server, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { type Server as TlsServer, createServer as createTlsServer } from "node:tls";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OutboundRefusedError, outboundPolicyFrom, outboundRefusal } from "../../src/notifications/outbound-policy";
import { nodeOutboundFetch } from "../../src/node/outbound-fetch";

/** An HTTP receiver on 127.0.0.1 that counts connections and keeps the Host header of each request. */
let receiver: Server;
let port: number;
let connections = 0;
const hosts: string[] = [];

beforeAll(async () => {
  receiver = createServer((req, res) => {
    hosts.push(req.headers.host ?? "");
    res.writeHead(204).end();
  });
  receiver.on("connection", () => connections++);
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  port = (receiver.address() as AddressInfo).port;
});
afterAll(() => new Promise((resolve) => receiver.close(resolve)));

const refusedWith = async (request: Promise<Response>) => {
  const error = await request.then(
    () => null,
    (cause: unknown) => cause,
  );
  return outboundRefusal(error);
};

describe("the Node default policy (OUTBOUND_ALLOW_HOSTS unset)", () => {
  const fetchOut = nodeOutboundFetch(outboundPolicyFrom({}), { resolve: async () => ["127.0.0.1"] });
  const spellings = [
    "127.0.0.1",
    "localhost",
    "2130706433",
    "0x7f000001",
    "127.1",
    "0177.0.0.1",
    "%31%32%37.0.0.1",
    "[::ffff:127.0.0.1]",
    "[::1]",
    "hooks.example.com",
  ];

  for (const host of spellings) {
    for (const scheme of ["http", "https"]) {
      it(`never connects to the receiver for ${scheme}://${host}:<port>`, async () => {
        const before = connections;
        const refusal = await refusedWith(fetchOut(`${scheme}://${host}:${port}/hook`, { method: "POST", body: "{}" }));
        expect(refusal).toBeInstanceOf(OutboundRefusedError);
        expect(connections).toBe(before);
      });
    }
  }
});

describe("an operator allowance", () => {
  it("reaches the allowed host over http, named in the Host header, trying its addresses in turn", async () => {
    // localhost may resolve to ::1 first, where nothing listens: the next checked address answers.
    const fetchOut = nodeOutboundFetch({ allowHosts: ["localhost"] }, { resolve: async () => ["::1", "127.0.0.1"] });
    const response = await fetchOut(`http://localhost:${port}/hook`, { method: "POST", body: "{}" });
    expect(response.status).toBe(204);
    expect(hosts.at(-1)).toBe(`localhost:${port}`);
  });

  it("does not let in another port of the allowed host", async () => {
    const fetchOut = nodeOutboundFetch({ allowHosts: [`localhost:${port + 1}`] }, { resolve: async () => ["127.0.0.1"] });
    const before = connections;
    expect(await refusedWith(fetchOut(`http://localhost:${port}/hook`))).toBeInstanceOf(OutboundRefusedError);
    expect(connections).toBe(before);
  });
});

describe("DNS rebinding", () => {
  /**
   * Two TLS listeners on one port: 127.0.0.1 stands for the public address the policy accepts (the
   * operator allows that address here, so that a test can listen there), 127.0.0.2 for the internal
   * address a rebinding answer turns to. Each records the server name (SNI) of every handshake.
   */
  let checked: TlsServer;
  let internal: TlsServer;
  let tlsPort: number;
  const seen = { checked: [] as string[], internal: [] as string[] };

  const listener = (names: string[]) => {
    const server = createTlsServer({ SNICallback: (name, done) => (names.push(name), done(new Error("no certificate here"))) });
    server.on("tlsClientError", () => {});
    return server;
  };

  beforeAll(async () => {
    checked = listener(seen.checked);
    internal = listener(seen.internal);
    await new Promise<void>((resolve) => checked.listen(0, "127.0.0.1", resolve));
    tlsPort = (checked.address() as AddressInfo).port;
    await new Promise<void>((resolve, reject) => internal.once("error", reject).listen(tlsPort, "127.0.0.2", resolve));
  });
  afterAll(async () => {
    await new Promise((resolve) => checked.close(resolve));
    await new Promise((resolve) => internal.close(resolve));
  });

  it("a resolver answering the checked address then an internal one: one lookup per connection, and the internal address is never dialled", async () => {
    const answers = [["127.0.0.1"], ["127.0.0.2"], ["127.0.0.2"]];
    const asked: string[] = [];
    const resolve = async (host: string) => {
      asked.push(host);
      return answers.shift() ?? ["127.0.0.2"];
    };
    const fetchOut = nodeOutboundFetch({ allowHosts: [`127.0.0.1:${tlsPort}`] }, { resolve });

    // The first connection dials what the one lookup answered and checked, with the name as the TLS server name.
    const first = await fetchOut(`https://rebind.example:${tlsPort}/hook`, { method: "POST", body: "{}" }).catch((error: unknown) => error);
    expect(first).toBeInstanceOf(Error);
    expect(outboundRefusal(first)).toBeNull();
    expect(asked).toEqual(["rebind.example"]);
    expect(seen.checked).toEqual(["rebind.example"]);

    // The rebinding answer is judged where it is used: refused, nothing dialled.
    for (let i = 0; i < 2; i++) {
      const refusal = await refusedWith(fetchOut(`https://rebind.example:${tlsPort}/hook`, { method: "POST", body: "{}" }));
      expect(refusal?.message).toMatch(/resolves to a private, loopback, link-local or reserved address/);
    }
    expect(asked).toHaveLength(3);
    expect(seen.internal).toEqual([]);
    expect(seen.checked).toHaveLength(1);
  });
});
