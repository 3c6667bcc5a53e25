/**
 * The outbound-request policy (src/notifications/outbound-policy.ts), through its real functions:
 * every spelling of loopback refused without an operator allowance (the Node default too), the
 * ranges the address policy lacked (documentation, NAT64, site-local, 240/4…), internal names,
 * the operator's allowances (OUTBOUND_ALLOW_HOSTS) with their ports, the connection-time judgement
 * of resolved addresses, the guarded fetch, and the redaction members see.
 */
import { describe, expect, it } from "vitest";
import {
  type OutboundPolicy,
  OutboundRefusedError,
  connectionProblem,
  guardedFetch,
  isPublicAddress,
  outboundPolicyFrom,
  outboundUrlProblem,
  parseAllowHosts,
} from "../../src/notifications/outbound-policy";
import { redactedWebhookUrl } from "../../src/services/notifications/notification-presenters";

/** The Node entry's policy when OUTBOUND_ALLOW_HOSTS is unset (what a fresh `npm start` runs with). */
const NODE_DEFAULT = outboundPolicyFrom({});

/** Loopback, every way a URL can spell it (WHATWG parsing turns most into 127.0.0.1 or [::1]). */
const LOOPBACK_HOSTS = [
  "127.0.0.1",
  "127.0.0.2",
  "localhost",
  "LOCALHOST",
  "localhost.",
  "api.localhost",
  "2130706433",
  "0x7f000001",
  "0X7F000001",
  "127.1",
  "0177.0.0.1",
  "017700000001",
  "0x7f.0.0.0x1",
  "127.000.000.001",
  "127.0.0.1.",
  "%31%32%37.0.0.1",
  "%6c%6f%63%61%6c%68%6f%73%74",
  "\uff10x7f.1",
  "127\u30020\u30020\u30021",
  "[::1]",
  "[0:0:0:0:0:0:0:1]",
  "[::ffff:127.0.0.1]",
  "[::ffff:7f00:1]",
  "[::127.0.0.1]",
  "[64:ff9b::127.0.0.1]",
  "[64:ff9b::7f00:1]",
  "[2002:7f00:1::1]",
  "0",
  "0.0.0.0",
  "[::]",
];

describe("loopback, refused without an operator allowance", () => {
  for (const host of LOOPBACK_HOSTS) {
    for (const scheme of ["http", "https"]) {
      it(`${scheme}://${host}:8080/hook`, () => {
        expect(outboundUrlProblem(`${scheme}://${host}:8080/hook`, NODE_DEFAULT)).not.toBeNull();
        expect(outboundUrlProblem(`${scheme}://${host}/hook`, {})).not.toBeNull();
      });
    }
  }
});

describe("internal and reserved ranges", () => {
  const internal = [
    "10.0.0.1",
    "172.16.0.1",
    "172.31.255.255",
    "192.168.1.10",
    "169.254.169.254",
    "100.64.0.1",
    "100.127.255.255",
    "192.0.0.8",
    "192.0.2.1", // TEST-NET-1
    "198.51.100.7", // TEST-NET-2
    "203.0.113.9", // TEST-NET-3
    "192.88.99.1",
    "198.18.0.1",
    "198.19.255.255",
    "224.0.0.1",
    "239.255.255.250",
    "240.0.0.1", // 240/4
    "255.255.255.255",
    "::1",
    "::",
    "fc00::1",
    "fd12:3456:789a::1", // unique-local
    "fe80::1",
    "fec0::1", // site-local
    "ff02::1",
    "64:ff9b::a00:1", // NAT64, 10.0.0.1 inside
    "64:ff9b::808:808", // NAT64 of a public address: still a translator inside a network
    "64:ff9b:1::c0a8:1", // local-use NAT64
    "100::1", // discard-only
    "2001:db8::1", // documentation
    "2001:db8:ffff::1",
    "3fff::1", // documentation (RFC 9637)
    "2001::1", // Teredo
    "2001:2::1", // benchmarking
    "2002:c0a8:1::1", // 6to4
    "::ffff:10.0.0.1",
    "::ffff:0:a00:1", // IPv4-translated
    "::a00:1", // IPv4-compatible
    "4000::1", // outside global unicast
  ];
  for (const address of internal) {
    it(`refuses ${address}, as a URL host and as a resolved address`, () => {
      expect(isPublicAddress(address)).toBe(false);
      const host = address.includes(":") ? `[${address}]` : address;
      expect(outboundUrlProblem(`https://${host}/hook`, NODE_DEFAULT)).toMatch(/private, loopback, link-local or reserved/);
      expect(connectionProblem(NODE_DEFAULT, { host: "hooks.example.com", port: 443, addresses: [address] })).toMatch(
        /resolves to a private/,
      );
    });
  }

  const publicAddresses = [
    "8.8.8.8",
    "93.184.216.34",
    "172.32.0.1",
    "100.128.0.1",
    "192.0.3.1",
    "198.20.0.1",
    "223.255.255.255",
    "2606:4700:4700::1111",
    "2a00:1450::1",
    "::ffff:8.8.8.8",
  ];
  for (const address of publicAddresses) {
    it(`accepts the public address ${address}`, () => {
      expect(isPublicAddress(address)).toBe(true);
      expect(outboundUrlProblem(`https://${address.includes(":") ? `[${address}]` : address}/hook`, NODE_DEFAULT)).toBeNull();
    });
  }
});

describe("URLs", () => {
  it("refuses internal names, single labels, credentials, other schemes and http to the internet", () => {
    for (const url of [
      "https://printer.local/x",
      "https://svc.internal/x",
      "https://router.lan/x",
      "https://nas.home.arpa/x",
      "https://intranet/x",
      "https://corp/x",
    ]) {
      expect(outboundUrlProblem(url, NODE_DEFAULT), url).toMatch(/internal host name|fully qualified/);
    }
    expect(outboundUrlProblem("https://user:pass@hooks.example.com/x", NODE_DEFAULT)).toBe("must not contain credentials");
    expect(outboundUrlProblem("ftp://hooks.example.com/x", NODE_DEFAULT)).toBe("must use https");
    expect(outboundUrlProblem("http://hooks.example.com/x", NODE_DEFAULT)).toMatch(/must use https/);
    expect(outboundUrlProblem("not a url", NODE_DEFAULT)).toBe("must be an absolute URL");
    expect(outboundUrlProblem(`https://hooks.example.com/${"x".repeat(2048)}`, NODE_DEFAULT)).toMatch(/too long/);
    expect(outboundUrlProblem("https://hooks.slack.com/services/T0/B0/secret", NODE_DEFAULT)).toBeNull();
  });

  it("refuses control characters, which URL parsing would percent-encode but the URL is stored as typed (a NUL was a 500)", () => {
    for (const url of [
      "https://hooks.example.com/a\u0000",
      "https://hooks.example.com/a\tb",
      "https://hooks.example.com/\u007f",
      "https://hooks.example.com/a\nb",
    ]) {
      expect(outboundUrlProblem(url, NODE_DEFAULT), JSON.stringify(url)).toBe("must not contain control characters");
    }
  });

  it("an operator allowance lets the named host in, over http too, on its port only when it names one", () => {
    const policy: OutboundPolicy = { allowHosts: parseAllowHosts("127.0.0.1:8080, localhost,[::1]:9") };
    expect(policy.allowHosts).toEqual(["127.0.0.1:8080", "localhost", "[::1]:9"]);
    expect(outboundUrlProblem("http://127.0.0.1:8080/hook", policy)).toBeNull();
    expect(outboundUrlProblem("http://2130706433:8080/hook", policy)).toBeNull(); // the same address, spelled otherwise
    expect(outboundUrlProblem("http://127.0.0.1:8081/hook", policy)).not.toBeNull();
    expect(outboundUrlProblem("http://127.0.0.1/hook", policy)).not.toBeNull();
    expect(outboundUrlProblem("http://localhost:3000/hook", policy)).toBeNull();
    expect(outboundUrlProblem("https://localhost/hook", policy)).toBeNull();
    expect(outboundUrlProblem("http://[::1]:9/hook", policy)).toBeNull();
    expect(outboundUrlProblem("http://[::1]:10/hook", policy)).not.toBeNull();
    expect(outboundUrlProblem("http://10.0.0.1/hook", policy)).not.toBeNull();
    expect(outboundUrlProblem("http://hooks.example.com/hook", policy)).toMatch(/must use https/);
  });

  it("OUTBOUND_ALLOW_HOSTS takes hosts and host:port only; the caps take whole numbers", () => {
    expect(parseAllowHosts(undefined)).toEqual([]);
    expect(parseAllowHosts(" , ")).toEqual([]);
    expect(parseAllowHosts("LocalHost,127.1")).toEqual(["localhost", "127.0.0.1"]);
    for (const bad of ["http://localhost", "localhost/x", "user@localhost", "localhost:99999", "localhost:0", "[::1"]) {
      expect(() => parseAllowHosts(bad), bad).toThrow(/OUTBOUND_ALLOW_HOSTS/);
    }
    expect(outboundPolicyFrom({})).toEqual({ allowHosts: [], webhooksPerOrganization: 10, deliveriesPerMinute: 600 });
    expect(outboundPolicyFrom({ WEBHOOKS_PER_ORGANIZATION: "25", WEBHOOK_DELIVERIES_PER_MINUTE: "60" })).toMatchObject({
      webhooksPerOrganization: 25,
      deliveriesPerMinute: 60,
    });
    expect(() => outboundPolicyFrom({ WEBHOOKS_PER_ORGANIZATION: "0" })).toThrow(/WEBHOOKS_PER_ORGANIZATION/);
    expect(() => outboundPolicyFrom({ WEBHOOK_DELIVERIES_PER_MINUTE: "lots" })).toThrow(/WEBHOOK_DELIVERIES_PER_MINUTE/);
  });
});

describe("connections: what a host resolved to", () => {
  const target = (addresses: string[], host = "hooks.example.com", port = 443) => ({ host, port, addresses });

  it("every address must be public: one internal answer among public ones refuses the connection", () => {
    expect(connectionProblem(NODE_DEFAULT, target(["93.184.216.34"]))).toBeNull();
    expect(connectionProblem(NODE_DEFAULT, target(["93.184.216.34", "10.0.0.1"]))).toMatch(/resolves to a private/);
    expect(connectionProblem(NODE_DEFAULT, target([]))).toBe("host could not be resolved");
  });

  it("an allowed host may resolve anywhere; an allowed address may be reached by name on its port", () => {
    const policy: OutboundPolicy = { allowHosts: ["localhost", "127.0.0.1:8080"] };
    expect(connectionProblem(policy, target(["::1", "127.0.0.1"], "localhost", 3000))).toBeNull();
    expect(connectionProblem(policy, target(["127.0.0.1"], "rebind.example", 8080))).toBeNull();
    expect(connectionProblem(policy, target(["127.0.0.1"], "rebind.example", 8081))).toMatch(/resolves to a private/);
    expect(connectionProblem(policy, target(["127.0.0.2"], "rebind.example", 8080))).toMatch(/resolves to a private/);
  });
});

describe("guardedFetch", () => {
  it("refuses before anything is sent, and never follows a redirect", async () => {
    const sent: RequestInit[] = [];
    const inner = (async (_input: unknown, init?: RequestInit) => {
      sent.push(init!);
      return new Response(null, { status: 204 });
    }) as typeof fetch;
    const guarded = guardedFetch(NODE_DEFAULT, inner);
    await expect(guarded("http://2130706433/hook", { method: "POST" })).rejects.toBeInstanceOf(OutboundRefusedError);
    await expect(guarded(new URL("https://[::ffff:127.0.0.1]/hook"))).rejects.toBeInstanceOf(OutboundRefusedError);
    expect(sent).toEqual([]);
    await guarded("https://hooks.example.com/hook", { method: "POST", redirect: "follow" });
    expect(sent).toEqual([{ method: "POST", redirect: "manual" }]);
  });
});

describe("redactedWebhookUrl", () => {
  it("keeps the scheme and host, masks the path and query that carry receivers' credentials", () => {
    expect(redactedWebhookUrl("https://hooks.slack.com/services/T000/B000/XXXXXXXX")).toBe("https://hooks.slack.com/…");
    expect(redactedWebhookUrl("https://example.webhook.office.com/webhookb2/abc@def/IncomingWebhook/123?token=x")).toBe(
      "https://example.webhook.office.com/…",
    );
    expect(redactedWebhookUrl("http://127.0.0.1:9/hook")).toBe("http://127.0.0.1:9/…");
    expect(redactedWebhookUrl("https://hooks.example.com/")).toBe("https://hooks.example.com/");
    expect(redactedWebhookUrl("https://hooks.example.com/?k=secret")).toBe("https://hooks.example.com/…");
  });
});
