/** The client address (src/lib/client-address.ts): parsing, normalising, TRUSTED_PROXIES, X-Forwarded-For, CF-Connecting-IP, buckets. */
import { describe, expect, it } from "vitest";
import {
  MAX_FORWARDED_HOPS,
  MAX_FORWARDED_LENGTH,
  addressBucket,
  clientAddressFromCloudflare,
  clientAddressFromConnection,
  inRanges,
  normaliseIpAddress,
  parseIpAddress,
  parseTrustedProxies,
} from "../../src/lib/client-address";

describe("normaliseIpAddress", () => {
  it.each([
    ["203.0.113.7", "203.0.113.7"],
    ["0.0.0.0", "0.0.0.0"],
    ["255.255.255.255", "255.255.255.255"],
    ["203.0.113.7:443", "203.0.113.7"],
    ["::ffff:203.0.113.7", "203.0.113.7"],
    ["::FFFF:cb00:7107", "203.0.113.7"],
    ["[::ffff:203.0.113.7]:80", "203.0.113.7"],
    ["2001:DB8::1", "2001:db8::1"],
    ["2001:0db8:0000:0000:0000:0000:0000:0001", "2001:db8::1"],
    ["2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"],
    ["2001:db8:0:1:1:1:1:1", "2001:db8:0:1:1:1:1:1"],
    ["2001:0:0:1:0:0:0:1", "2001:0:0:1::1"],
    ["::", "::"],
    ["::1", "::1"],
    ["1::", "1::"],
    ["[2001:db8::1]", "2001:db8::1"],
    ["[2001:db8::1]:8443", "2001:db8::1"],
    ["fe80::1%eth0", "fe80::1"],
    ["[fe80::1%25eth0]:80", "fe80::1"],
    ["64:ff9b::192.0.2.33", "64:ff9b::c000:221"],
    ["1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8"],
  ])("%s → %s", (input, expected) => {
    expect(normaliseIpAddress(input)).toBe(expected);
  });

  it.each([
    "",
    "unknown",
    "_hidden",
    "1.2.3",
    "1.2.3.4.5",
    "256.1.1.1",
    "01.2.3.4",
    "1.2.3.4:",
    "1.2.3.4:65536",
    "1.2.3.4:80:80",
    "1..2.3",
    " 1.2.3.4",
    ":::",
    "1:::2",
    "1::2::3",
    "1:2:3:4:5:6:7",
    "1:2:3:4:5:6:7:8:9",
    "1:2:3:4:5:6:7::8",
    "12345::1",
    "g::1",
    "::1%",
    "[::1",
    "[::1]x",
    "[1.2.3.4]",
    "::1.2.3.4:5",
    "1.2.3.4::",
    `${"1:".repeat(60)}1`,
  ])("%j is no address", (input) => {
    expect(parseIpAddress(input)).toBeNull();
  });

  it("an address longer than any written address is refused without being read", () => {
    expect(parseIpAddress(`::${"0".repeat(1_000_000)}1`)).toBeNull();
  });
});

describe("TRUSTED_PROXIES", () => {
  it("addresses and CIDR ranges of both families, spaces and empty entries ignored", () => {
    const ranges = parseTrustedProxies(" 10.0.0.0/8, 192.0.2.1 ,,2001:db8::/32, ::1, ::ffff:172.16.0.0/108");
    const has = (address: string) => inRanges(ranges, parseIpAddress(address)!);
    expect(has("10.255.1.2")).toBe(true);
    expect(has("11.0.0.1")).toBe(false);
    expect(has("192.0.2.1")).toBe(true);
    expect(has("192.0.2.2")).toBe(false);
    expect(has("2001:db8:ffff::1")).toBe(true);
    expect(has("2001:db9::1")).toBe(false);
    expect(has("::1")).toBe(true);
    expect(has("::ffff:10.1.1.1")).toBe(true);
    expect(has("172.31.255.255")).toBe(true);
    expect(has("172.32.0.0")).toBe(false);
  });

  it("prefixes that do not end on a byte, host bits set, /0", () => {
    const ranges = parseTrustedProxies("198.51.100.77/27,2001:db8:8000::/33");
    const has = (address: string) => inRanges(ranges, parseIpAddress(address)!);
    expect(has("198.51.100.64")).toBe(true);
    expect(has("198.51.100.95")).toBe(true);
    expect(has("198.51.100.96")).toBe(false);
    expect(has("2001:db8:8000::1")).toBe(true);
    expect(has("2001:db8:7fff::1")).toBe(false);
    expect(inRanges(parseTrustedProxies("0.0.0.0/0"), parseIpAddress("203.0.113.1")!)).toBe(true);
    expect(inRanges(parseTrustedProxies("0.0.0.0/0"), parseIpAddress("2001:db8::1")!)).toBe(false);
  });

  it("unset or empty: none", () => {
    expect(parseTrustedProxies(undefined)).toEqual([]);
    expect(parseTrustedProxies("")).toEqual([]);
  });

  it.each([
    "10.0.0.0/33",
    "::/129",
    "10.0.0.0/",
    "10.0.0.0/08",
    "10.0.0.0/-1",
    "localhost",
    "10.0.0.1:80",
    "[::1]",
    "fe80::1%eth0",
    "::ffff:0:0/95",
  ])("%j fails with a message naming the variable and the entry", (entry) => {
    expect(() => parseTrustedProxies(`127.0.0.1,${entry}`)).toThrow(
      new RegExp(`^TRUSTED_PROXIES must list IP addresses or CIDR ranges.*'${entry.replace(/[[\]/.*+?^$()|\\]/g, "\\$&")}' is not one`),
    );
  });
});

describe("clientAddressFromConnection (Node)", () => {
  const proxies = parseTrustedProxies("10.0.0.0/8,2001:db8:ffff::/48");
  const from = (remoteAddress: string | undefined, forwardedFor: string | null, trustedProxies = proxies) =>
    clientAddressFromConnection({ remoteAddress, forwardedFor, trustedProxies });

  it("an untrusted connection is the client: its X-Forwarded-For is ignored", () => {
    expect(from("203.0.113.7", "198.51.100.1")).toBe("203.0.113.7");
    expect(from("::ffff:203.0.113.7", "198.51.100.1")).toBe("203.0.113.7");
    expect(from("10.0.0.1", "198.51.100.1", [])).toBe("10.0.0.1");
  });

  it("from a trusted proxy: the right-most entry that is not a trusted proxy", () => {
    expect(from("10.0.0.1", "198.51.100.1")).toBe("198.51.100.1");
    // A client's own header, to the left of what the proxies appended, is not read.
    expect(from("10.0.0.1", "1.1.1.1, 198.51.100.1, 10.0.0.2")).toBe("198.51.100.1");
    expect(from("10.0.0.1", "1.1.1.1,198.51.100.1,2001:db8:ffff::9")).toBe("198.51.100.1");
    expect(from("::ffff:10.0.0.1", "[2001:DB8:1::5]:4711")).toBe("2001:db8:1::5");
  });

  it("from a trusted proxy without a header, or with only trusted hops: the last trusted hop", () => {
    expect(from("10.0.0.1", null)).toBe("10.0.0.1");
    expect(from("10.0.0.1", "")).toBe("10.0.0.1");
    expect(from("10.0.0.1", "10.0.0.3, 10.0.0.2")).toBe("10.0.0.3");
  });

  it("garbage stops the walk at the last trusted hop: never an address the client wrote", () => {
    expect(from("10.0.0.1", "198.51.100.1, unknown")).toBe("10.0.0.1");
    expect(from("10.0.0.1", "198.51.100.1, 10.0.0.2, _hidden")).toBe("10.0.0.1");
    expect(from("10.0.0.1", "198.51.100.1, _hidden, 10.0.0.2")).toBe("10.0.0.2");
    expect(from("10.0.0.1", "198.51.100.1,,10.0.0.2")).toBe("10.0.0.2");
    expect(from("10.0.0.1", ",10.0.0.2")).toBe("10.0.0.2");
    expect(from("10.0.0.1", "198.51.100.1, 10.0.0.2,")).toBe("10.0.0.1");
  });

  it("the walk is bounded in hops and in length", () => {
    const trustedHops = Array.from({ length: MAX_FORWARDED_HOPS + 5 }, (_, i) => `10.0.${i >> 8}.${i & 255}`);
    // Past MAX_FORWARDED_HOPS trusted entries the walk stops at the last one read.
    expect(from("10.0.0.1", ["198.51.100.1", ...trustedHops].join(", "))).toBe(trustedHops[5]);
    // A header longer than the bound: only its right-most part is read; the entry the bound cuts is not.
    const long = `${"9".repeat(MAX_FORWARDED_LENGTH)}, 198.51.100.1`;
    expect(from("10.0.0.1", long)).toBe("198.51.100.1");
    // "…1123.4.5.6" is no address, but the bound cuts it to "3.4.5.6", which is not read either.
    const cut = `${"1".repeat(100)}23.4.5.6,${" ".repeat(MAX_FORWARDED_LENGTH - 16)}10.0.0.2`;
    expect(from("10.0.0.1", cut)).toBe("10.0.0.2");
    expect(from("10.0.0.1", cut.slice(-MAX_FORWARDED_LENGTH))).toBe("3.4.5.6");
  });

  it("hostile headers take linear time", () => {
    const started = performance.now();
    for (const header of [
      ",".repeat(1_000_000),
      "1".repeat(1_000_000),
      "1:".repeat(500_000),
      " ".repeat(1_000_000),
      "[".repeat(1_000_000),
    ]) {
      expect(from("10.0.0.1", header)).toBe("10.0.0.1");
    }
    expect(performance.now() - started).toBeLessThan(1000);
  });

  it("a closed socket has no address: null", () => {
    expect(from(undefined, "198.51.100.1")).toBeNull();
  });
});

describe("clientAddressFromCloudflare (Workers)", () => {
  it("CF-Connecting-IP, normalised; null without one or with garbage", () => {
    expect(clientAddressFromCloudflare("203.0.113.7")).toBe("203.0.113.7");
    expect(clientAddressFromCloudflare("2001:DB8:0::1")).toBe("2001:db8::1");
    expect(clientAddressFromCloudflare("::ffff:203.0.113.7")).toBe("203.0.113.7");
    expect(clientAddressFromCloudflare(null)).toBeNull();
    expect(clientAddressFromCloudflare("")).toBeNull();
    expect(clientAddressFromCloudflare("not an address")).toBeNull();
  });
});

describe("addressBucket", () => {
  it("IPv4 as it is, IPv6 by /64, unknown together", () => {
    expect(addressBucket("203.0.113.7")).toBe("203.0.113.7");
    expect(addressBucket("2001:db8:1:2:3:4:5:6")).toBe("2001:db8:1:2::/64");
    expect(addressBucket("2001:db8:1:2::ffff")).toBe("2001:db8:1:2::/64");
    expect(addressBucket("2001:db8:1:3::1")).toBe("2001:db8:1:3::/64");
    expect(addressBucket("::1")).toBe("::/64");
    expect(addressBucket(null)).toBe("unknown");
    expect(addressBucket("garbage")).toBe("unknown");
  });
});
