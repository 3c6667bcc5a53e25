/**
 * Where webhooks may go. Notifications carry test output to a URL an admin typed, from inside our
 * network: https only (http only to loopback, and only when running locally), never to private,
 * loopback, link-local or otherwise internal addresses, and redirects are never followed (the
 * sender uses `redirect: "manual"`). Checked when an endpoint is configured and again, with the
 * host's resolved addresses where the runtime can resolve them, before every delivery.
 */

export type UrlPolicy = {
  /** Local runs only (npm start / tests): http://localhost, 127.0.0.1 and [::1] are allowed. */
  allowLoopbackHttp: boolean;
};

function ipv4Parts(host: string): number[] | null {
  const match = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(host);
  if (!match) return null;
  const parts = match.slice(1).map(Number);
  return parts.every((part) => part <= 255) ? parts : null;
}

function isInternalIpv4([a, b]: number[]): boolean {
  return (
    a === 0 || // "this" network
    a === 10 ||
    a === 127 ||
    (a === 100 && b! >= 64 && b! <= 127) || // carrier-grade NAT
    (a === 169 && b === 254) || // link-local, cloud metadata
    (a === 172 && b! >= 16 && b! <= 31) ||
    (a === 192 && b === 168) ||
    (a === 192 && b === 0) || // IETF protocol assignments
    (a === 198 && (b === 18 || b === 19)) || // benchmarking
    a! >= 224 // multicast, reserved, broadcast
  );
}

/** Expands an IPv6 literal to 8 groups, or null. */
function ipv6Groups(host: string): number[] | null {
  if (!host.includes(":")) return null;
  let text = host;
  const embedded = /(\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3})$/.exec(text);
  let tail: number[] = [];
  if (embedded) {
    const v4 = ipv4Parts(embedded[1]!);
    if (!v4) return null;
    tail = [(v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!];
    text = text.slice(0, -embedded[1]!.length).replace(/:$/, ":0").replace(/::0$/, "::");
    if (text.endsWith(":0") && !text.endsWith("::0")) text = text.slice(0, -2);
  }
  const halves = text.split("::");
  if (halves.length > 2) return null;
  const parse = (part: string) => (part === "" ? [] : part.split(":").map((group) => (/^[0-9a-f]{1,4}$/i.test(group) ? Number.parseInt(group, 16) : Number.NaN)));
  const head = parse(halves[0]!);
  const rest = halves.length === 2 ? parse(halves[1]!) : [];
  const missing = 8 - tail.length - head.length - rest.length;
  if (halves.length === 1 && missing !== 0) return null;
  if (missing < 0) return null;
  const groups = [...head, ...Array(halves.length === 2 ? missing : 0).fill(0), ...rest, ...tail];
  return groups.length === 8 && groups.every((group) => Number.isInteger(group) && group >= 0 && group <= 0xffff) ? groups : null;
}

function isInternalIpv6(groups: number[]): boolean {
  const [first] = groups as [number];
  if (groups.every((group) => group === 0)) return true; // ::
  if (groups.slice(0, 7).every((group) => group === 0) && groups[7] === 1) return true; // ::1
  if (groups.slice(0, 5).every((group) => group === 0) && groups[5] === 0xffff) {
    return isInternalIpv4([groups[6]! >> 8, groups[6]! & 0xff, groups[7]! >> 8, groups[7]! & 0xff]); // ::ffff:a.b.c.d
  }
  if (groups.slice(0, 6).every((group) => group === 0)) return true; // deprecated IPv4-compatible
  return (
    (first & 0xfe00) === 0xfc00 || // unique local
    (first & 0xffc0) === 0xfe80 || // link-local
    (first & 0xff00) === 0xff00 || // multicast
    first === 0x0064 || // NAT64 and local-use translation prefixes
    (first === 0x2001 && groups[1]! < 0x0200) || // 2001::/23 protocol assignments (Teredo, benchmarking…)
    first === 0x2002 // 6to4 (embeds IPv4)
  );
}

/** Loopback literals and names. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, "").toLowerCase();
  if (bare === "localhost" || bare.endsWith(".localhost")) return true;
  const v4 = ipv4Parts(bare);
  if (v4) return v4[0] === 127;
  const v6 = ipv6Groups(bare);
  if (v6 === null) return false;
  return v6.slice(0, 7).every((group) => group === 0) && v6[7] === 1;
}

/** Whether an IP address (v4 or v6 literal) is internal: private, loopback, link-local, reserved. */
export function isInternalAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, "").replace(/%.*$/, "").toLowerCase();
  const v4 = ipv4Parts(bare);
  if (v4) return isInternalIpv4(v4);
  const v6 = ipv6Groups(bare);
  if (v6) return isInternalIpv6(v6);
  return false;
}

/** Names that resolve inside networks rather than on the internet. */
const INTERNAL_SUFFIXES = [".local", ".internal", ".lan", ".home", ".corp", ".intranet", ".localdomain"];

/** The reason a webhook URL is refused, or null when it is acceptable. */
export function webhookUrlProblem(raw: string, policy: UrlPolicy): string | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return "must be an absolute URL";
  }
  if (raw.length > 2048) return "is too long (maximum is 2048 characters)";
  if (url.username || url.password) return "must not contain credentials";
  const host = url.hostname.toLowerCase();
  const loopback = isLoopbackHost(host);
  if (url.protocol === "http:") {
    if (!(loopback && policy.allowLoopbackHttp)) return "must use https (http is allowed only to loopback when running locally)";
    return null;
  }
  if (url.protocol !== "https:") return "must use https";
  if (loopback) return policy.allowLoopbackHttp ? null : "must not point at a loopback address";
  const bare = host.replace(/^\[|\]$/g, "");
  if (isInternalAddress(bare)) return "must not point at a private, link-local or reserved address";
  // Numeric forms that URL parsing did not normalise to dotted quads are refused outright.
  if (/^[0-9.]+$/.test(bare) || /^0x/i.test(bare)) return "must not point at a private, link-local or reserved address";
  if (!bare.includes(".") && !bare.includes(":")) return "must use a fully qualified host name";
  if (INTERNAL_SUFFIXES.some((suffix) => bare.endsWith(suffix))) return "must not point at an internal host name";
  return null;
}
