/**
 * The outbound-request policy: every URL the service fetches (webhook deliveries today, other
 * notification channels later) is an address someone typed, fetched from inside our network. So:
 *
 * - https only, to public addresses only: never loopback, private, carrier-grade NAT, link-local,
 *   unique-local, multicast, NAT64, 6to4/Teredo, benchmarking, documentation (TEST-NETs,
 *   2001:db8::/32, 3fff::/20) or reserved ranges (240/4), in any spelling of the address (URL
 *   parsing turns `2130706433`, `0x7f000001`, `127.1`, `0177.0.0.1` and percent-encoded hosts
 *   into dotted quads before this looks at them), nor to names that only resolve inside a network
 *   (`localhost`, `*.local`, `*.internal`, single labels…);
 * - no credentials in the URL, redirects never followed (`guardedFetch` forces `redirect: "manual"`);
 * - the operator's exceptions, for local development and tests only: OUTBOUND_ALLOW_HOSTS names
 *   hosts (optionally host:port) that may be reached even though they are internal, and over http.
 *   Empty by default, so a fresh `npm start` refuses loopback too (docs/outbound-policy.md).
 *
 * This module is runtime-agnostic: it judges URLs and addresses. Where the runtime lets us resolve
 * names (Node), src/node/outbound-fetch.ts resolves each host once, judges the addresses with
 * `connectionProblem` and connects to the address it judged. On Workers, fetch cannot be given
 * an address: the URL rules apply, and Cloudflare's egress never reaches private networks.
 *
 * The policy also bounds the volume an organization can cause: webhooks per organization and
 * deliveries per minute (defaults below; WEBHOOKS_PER_ORGANIZATION, WEBHOOK_DELIVERIES_PER_MINUTE).
 */
import { hasControlCharacters } from "../lib/control-characters";

export type OutboundPolicy = {
  /** OUTBOUND_ALLOW_HOSTS as parsed by `parseAllowHosts`: `host` or `host:port` entries. */
  allowHosts?: readonly string[];
  /** Most webhook endpoints one organization may have (DEFAULT_WEBHOOKS_PER_ORGANIZATION). */
  webhooksPerOrganization?: number;
  /** Most webhook deliveries sent per organization and minute; more wait in the queue (DEFAULT_DELIVERIES_PER_MINUTE). */
  deliveriesPerMinute?: number;
};

export const DEFAULT_WEBHOOKS_PER_ORGANIZATION = 10;
export const DEFAULT_DELIVERIES_PER_MINUTE = 600;
const MAX_URL_LENGTH = 2048;

/** A request the policy refused before any byte left: its message completes "url …". */
export class OutboundRefusedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "OutboundRefusedError";
  }
}

/** The refusal somewhere in an error's cause chain (fetch wraps what its connector throws), or null. */
export function outboundRefusal(error: unknown): OutboundRefusedError | null {
  for (let current = error, depth = 0; current instanceof Error && depth < 5; current = current.cause, depth++) {
    if (current instanceof OutboundRefusedError || current.name === "OutboundRefusedError") return current as OutboundRefusedError;
  }
  return null;
}

// ---------------------------------------------------------------------------------------------
// Addresses

function ipv4Number(text: string): number | null {
  const match = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text);
  if (!match) return null;
  const parts = match.slice(1).map(Number);
  if (parts.some((part) => part > 255)) return null;
  return ((parts[0]! << 24) | (parts[1]! << 16) | (parts[2]! << 8) | parts[3]!) >>> 0;
}

/** Expands an IPv6 literal (an embedded dotted quad allowed) to its 128 bits, or null. */
function ipv6Number(text: string): bigint | null {
  if (!text.includes(":")) return null;
  let rest = text;
  let tail: number[] = [];
  const embedded = /(\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3})$/.exec(rest);
  if (embedded) {
    const v4 = ipv4Number(embedded[1]!);
    if (v4 === null) return null;
    tail = [v4 >>> 16, v4 & 0xffff];
    rest = rest.slice(0, -embedded[1]!.length);
    if (rest.endsWith(":") && !rest.endsWith("::")) rest = rest.slice(0, -1);
  }
  const halves = rest.split("::");
  if (halves.length > 2) return null;
  const groupsOf = (part: string) =>
    part === "" ? [] : part.split(":").map((group) => (/^[0-9a-f]{1,4}$/i.test(group) ? Number.parseInt(group, 16) : Number.NaN));
  const head = groupsOf(halves[0]!);
  const back = halves.length === 2 ? groupsOf(halves[1]!) : [];
  const missing = 8 - head.length - back.length - tail.length;
  if (missing < 0 || (halves.length === 1 && missing !== 0) || (halves.length === 2 && missing === 0)) return null;
  const groups = [...head, ...Array<number>(missing).fill(0), ...back, ...tail];
  if (groups.some((group) => !Number.isInteger(group))) return null;
  return groups.reduce((value, group) => (value << 16n) | BigInt(group), 0n);
}

/** IPv4 ranges that are not the public internet (RFC 6890 and its updates). */
const INTERNAL_V4: [string, number][] = [
  ["0.0.0.0", 8], // "this" network
  ["10.0.0.0", 8], // private
  ["100.64.0.0", 10], // carrier-grade NAT
  ["127.0.0.0", 8], // loopback
  ["169.254.0.0", 16], // link-local, cloud metadata
  ["172.16.0.0", 12], // private
  ["192.0.0.0", 24], // IETF protocol assignments
  ["192.0.2.0", 24], // documentation (TEST-NET-1)
  ["192.88.99.0", 24], // 6to4 relay anycast (deprecated)
  ["192.168.0.0", 16], // private
  ["198.18.0.0", 15], // benchmarking
  ["198.51.100.0", 24], // documentation (TEST-NET-2)
  ["203.0.113.0", 24], // documentation (TEST-NET-3)
  ["224.0.0.0", 4], // multicast
  ["240.0.0.0", 4], // reserved, and the broadcast address
];

/**
 * IPv6: only global unicast (2000::/3) is public, minus these parts of it. Everything outside it
 * is internal or not routable: ::, ::1, IPv4-compatible and -translated forms, NAT64 (64:ff9b::/96,
 * 64:ff9b:1::/48), discard-only 100::/64, unique-local fc00::/7, link-local fe80::/10, site-local
 * fec0::/10, multicast ff00::/8. IPv4-mapped addresses (::ffff:a.b.c.d) are judged by their IPv4.
 */
const INTERNAL_V6_IN_GLOBAL: [string, number][] = [
  ["2001::", 23], // IETF protocol assignments: Teredo (embeds IPv4), benchmarking, ORCHID
  ["2001:db8::", 32], // documentation
  ["2002::", 16], // 6to4 (embeds IPv4)
  ["3fff::", 20], // documentation (RFC 9637)
];

const inV4 = (value: number, [base, bits]: [string, number]) => bits === 0 || value >>> (32 - bits) === ipv4Number(base)! >>> (32 - bits);
const inV6 = (value: bigint, [base, bits]: [string, number]) => value >> BigInt(128 - bits) === ipv6Number(base)! >> BigInt(128 - bits);

/** An IP literal without brackets or zone, lowercase; null when the text is no IP address. */
function addressOf(text: string): { v4: number } | { v6: bigint } | null {
  const bare = text
    .replace(/^\[|\]$/g, "")
    .replace(/%.*$/, "")
    .toLowerCase();
  const v4 = ipv4Number(bare);
  if (v4 !== null) return { v4 };
  const v6 = ipv6Number(bare);
  return v6 === null ? null : { v6 };
}

/** Whether an IP literal (v4 or v6) is a public internet address: the only kind requests may go to. */
export function isPublicAddress(text: string): boolean {
  const address = addressOf(text);
  if (!address) return false;
  if ("v4" in address) return !INTERNAL_V4.some((range) => inV4(address.v4, range));
  const { v6 } = address;
  if (v6 >> 32n === 0xffffn) return !INTERNAL_V4.some((range) => inV4(Number(v6 & 0xffffffffn), range)); // ::ffff:a.b.c.d
  return v6 >> 125n === 1n && !INTERNAL_V6_IN_GLOBAL.some((range) => inV6(v6, range));
}

const isIpLiteral = (text: string) => addressOf(text) !== null;

// ---------------------------------------------------------------------------------------------
// Host names and the operator's allowances

/** Names that resolve inside networks (or to loopback) rather than on the internet. */
const INTERNAL_NAMES = ["localhost", "local", "internal", "lan", "home", "corp", "intranet", "localdomain", "arpa"];

/** A host as URL parsing normalises it, without brackets or a trailing dot, lowercase. */
function bareHost(hostname: string): string {
  return hostname
    .replace(/^\[|\]$/g, "")
    .replace(/\.+$/, "")
    .toLowerCase();
}

type AllowEntry = { host: string; port: number | null };

function parseEntry(entry: string): AllowEntry | null {
  const match = /^(\[[0-9a-f:.]+\]|[^:[\]/?#@\s]+)(?::(\d{1,5}))?$/i.exec(entry);
  if (!match) return null;
  let hostname: string;
  try {
    hostname = new URL(`http://${match[1]}/`).hostname;
  } catch {
    return null;
  }
  const port = match[2] === undefined ? null : Number(match[2]);
  if (port !== null && (port < 1 || port > 65535)) return null;
  return { host: bareHost(hostname), port };
}

/**
 * OUTBOUND_ALLOW_HOSTS: comma-separated `host` or `host:port` (IPv6 in brackets), normalised as URL
 * parsing does (`127.1` is 127.0.0.1). Throws on an entry that is not one, so a typo fails the start.
 */
export function parseAllowHosts(text: string | undefined): string[] {
  const entries = (text ?? "")
    .split(",")
    .map((entry) => entry.trim())
    .filter(Boolean);
  return entries.map((entry) => {
    const parsed = parseEntry(entry);
    if (!parsed) throw new Error(`OUTBOUND_ALLOW_HOSTS: '${entry.slice(0, 80)}' is not a host or host:port (docs/outbound-policy.md).`);
    const host = parsed.host.includes(":") ? `[${parsed.host}]` : parsed.host;
    return parsed.port === null ? host : `${host}:${parsed.port}`;
  });
}

function allowEntries(policy: OutboundPolicy): AllowEntry[] {
  return (policy.allowHosts ?? []).flatMap((entry) => parseEntry(entry) ?? []);
}

const sameHost = (a: string, b: string) => {
  const [left, right] = [addressOf(a), addressOf(b)];
  if (left && right) return "v4" in left ? "v4" in right && left.v4 === right.v4 : "v6" in right && left.v6 === right.v6;
  return bareHost(a) === bareHost(b);
};

/** Whether the operator allows this host (as the URL names it) on this port. */
function hostAllowed(policy: OutboundPolicy, host: string, port: number): boolean {
  return allowEntries(policy).some((entry) => sameHost(entry.host, host) && (entry.port === null || entry.port === port));
}

/** The port a URL reaches: its own, or its scheme's. */
function portOf(url: URL): number {
  return url.port ? Number(url.port) : url.protocol === "https:" ? 443 : 80;
}

// ---------------------------------------------------------------------------------------------
// The rules

const INTERNAL_ADDRESS = "must not point at a private, loopback, link-local or reserved address";

/** Why a host (as URL parsing left it) may not be reached, or null. Names are judged by their spelling only. */
function hostProblem(host: string): string | null {
  if (isIpLiteral(host)) return isPublicAddress(host) ? null : INTERNAL_ADDRESS;
  // Numeric spellings URL parsing did not turn into an address are refused outright.
  if (/^[0-9.]+$/.test(host) || /^0x/i.test(host)) return INTERNAL_ADDRESS;
  if (!host.includes(".")) return host === "localhost" ? "must not point at a loopback address" : "must use a fully qualified host name";
  const internal = INTERNAL_NAMES.find((name) => host === name || host.endsWith(`.${name}`));
  if (internal === "localhost") return "must not point at a loopback address";
  if (internal) return "must not point at an internal host name";
  return null;
}

/** Why a URL may not be fetched, or null when it may: checked when it is configured and before every request. */
export function outboundUrlProblem(raw: string, policy: OutboundPolicy): string | null {
  if (raw.length > MAX_URL_LENGTH) return `is too long (maximum is ${MAX_URL_LENGTH} characters)`;
  // URL parsing would percent-encode them, but the URL is stored as typed (and PostgreSQL refuses NUL).
  if (hasControlCharacters(raw)) return "must not contain control characters";
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return "must be an absolute URL";
  }
  if (url.username || url.password) return "must not contain credentials";
  if (url.protocol !== "https:" && url.protocol !== "http:") return "must use https";
  const host = bareHost(url.hostname);
  if (hostAllowed(policy, host, portOf(url))) return null;
  const problem = hostProblem(host);
  if (problem) return problem;
  return url.protocol === "http:" ? "must use https (http is allowed only to hosts the operator allows for local development)" : null;
}

/**
 * Why a connection to `host` (as the URL names it) on `port`, at the addresses it resolved to, is
 * refused, or null. Every address must be public, unless the operator allows the host or that
 * address (an allowed address reached by another name is no more than its literal would reach).
 */
export function connectionProblem(policy: OutboundPolicy, target: { host: string; port: number; addresses: string[] }): string | null {
  if (target.addresses.length === 0) return "host could not be resolved";
  if (hostAllowed(policy, target.host, target.port)) return null;
  const refused = target.addresses.some((address) => !isPublicAddress(address) && !hostAllowed(policy, address, target.port));
  return refused ? "resolves to a private, loopback, link-local or reserved address" : null;
}

/**
 * The runtime's fetch held to the policy: the URL is checked before anything leaves, and
 * redirects are never followed (a redirect's target was never checked). What a name resolves to
 * is checked by the fetch given here where the runtime allows it (Node: src/node/outbound-fetch.ts).
 */
export function guardedFetch(policy: OutboundPolicy, fetchWith: typeof fetch): typeof fetch {
  return async (input, init) => {
    const url = input instanceof Request ? input.url : String(input);
    const problem = outboundUrlProblem(url, policy);
    if (problem) throw new OutboundRefusedError(problem);
    return fetchWith(input, { ...init, redirect: "manual" });
  };
}

// ---------------------------------------------------------------------------------------------
// Volume

/** A whole number from 1 to `max` read from the environment, or the default when unset or empty. */
function parseLimit(name: string, text: string | undefined, fallback: number, max = 1_000_000): number {
  const trimmed = text?.trim() ?? "";
  if (trimmed === "") return fallback;
  const value = Number(trimmed);
  if (!/^\d+$/.test(trimmed) || value < 1 || value > max)
    throw new Error(`${name} must be a whole number from 1 to ${max}; it is '${trimmed.slice(0, 40)}'.`);
  return value;
}

/** The policy of an environment (Node's process.env, the Worker's bindings): allowances and caps. */
export function outboundPolicyFrom(env: {
  OUTBOUND_ALLOW_HOSTS?: string;
  WEBHOOKS_PER_ORGANIZATION?: string;
  WEBHOOK_DELIVERIES_PER_MINUTE?: string;
}): OutboundPolicy {
  return {
    allowHosts: parseAllowHosts(env.OUTBOUND_ALLOW_HOSTS),
    webhooksPerOrganization: parseLimit(
      "WEBHOOKS_PER_ORGANIZATION",
      env.WEBHOOKS_PER_ORGANIZATION,
      DEFAULT_WEBHOOKS_PER_ORGANIZATION,
      1000,
    ),
    deliveriesPerMinute: parseLimit("WEBHOOK_DELIVERIES_PER_MINUTE", env.WEBHOOK_DELIVERIES_PER_MINUTE, DEFAULT_DELIVERIES_PER_MINUTE),
  };
}
