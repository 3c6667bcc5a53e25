/**
 * Which client a request comes from, for the sign-in throttle (docs/web-app.md#sign-in-throttle).
 * Pure functions; the runtime entries call them, never the pages:
 *
 * - Node (`clientAddressFromConnection`): the connection's remote address; only when that address
 *   is one of the proxies the operator names (TRUSTED_PROXIES), the right-most X-Forwarded-For
 *   entry that is not itself a trusted proxy.
 * - Workers (`clientAddressFromCloudflare`): `CF-Connecting-IP`, which Cloudflare's edge sets and a
 *   client cannot forge.
 *
 * Addresses are normalised: IPv4-mapped IPv6 becomes IPv4, IPv6 is written in its canonical form
 * (RFC 5952: lower case, the longest run of zero groups as `::`), brackets, zone ids and ports are
 * dropped. The throttle groups IPv6 by /64 (`addressBucket`): one client often owns a whole /64.
 *
 * Everything here reads its input once, character by character or through indexOf, with fixed
 * bounds on lengths and hops: no regular expression runs on what a client sends.
 */

/** An address: 4 bytes (IPv4) or 16 (IPv6, never an IPv4-mapped one: those are IPv4). */
export type IpAddress = { readonly version: 4 | 6; readonly bytes: Uint8Array };

/** A range of TRUSTED_PROXIES: an address and how many leading bits must match. */
export type AddressRange = { readonly version: 4 | 6; readonly bytes: Uint8Array; readonly prefix: number };

/** Longer is no address: `[ffff:…:255.255.255.255%zone]:65535` fits with a generous zone id. */
const MAX_ADDRESS_LENGTH = 100;
/** X-Forwarded-For: at most this many entries are walked, from the right… */
export const MAX_FORWARDED_HOPS = 20;
/** …within its last this many characters (an entry cut by the bound counts as garbage). */
export const MAX_FORWARDED_LENGTH = 2048;

/** The bucket of requests whose address is not known (see `addressBucket`). */
export const UNKNOWN_ADDRESS_BUCKET = "unknown";

const isDigit = (code: number) => code >= 48 && code <= 57;

function hexValue(code: number): number {
  if (code >= 48 && code <= 57) return code - 48;
  if (code >= 97 && code <= 102) return code - 87;
  if (code >= 65 && code <= 70) return code - 55;
  return -1;
}

/** Dotted-quad IPv4 in text[start, end) into out[offset…offset+3]: four decimal parts 0–255, no leading zeros. */
function readIpv4(text: string, start: number, end: number, out: Uint8Array, offset: number): boolean {
  let part = 0;
  let value = 0;
  let digits = 0;
  for (let i = start; i <= end; i++) {
    if (i === end || text.charCodeAt(i) === 46 /* . */) {
      if (digits === 0 || part > 3) return false;
      out[offset + part] = value;
      part++;
      value = 0;
      digits = 0;
      continue;
    }
    const code = text.charCodeAt(i);
    if (!isDigit(code)) return false;
    // "010" could be read as octal by other software: refused rather than guessed.
    if (digits === 1 && value === 0) return false;
    value = value * 10 + (code - 48);
    digits++;
    if (value > 255) return false;
  }
  return part === 4;
}

/**
 * Colon-separated groups of text[start, end) (no `::` inside), into 16-bit values; the last group
 * may be an IPv4 address (two groups). Null if malformed.
 */
function readGroups(text: string, start: number, end: number, allowIpv4Tail: boolean): number[] | null {
  const groups: number[] = [];
  if (start === end) return groups;
  let groupStart = start;
  for (let i = start; i <= end; i++) {
    if (i < end && text.charCodeAt(i) !== 58 /* : */) continue;
    const last = i === end;
    const dot = last && allowIpv4Tail ? text.indexOf(".", groupStart) : -1;
    if (dot !== -1 && dot < end) {
      const four = new Uint8Array(4);
      if (!readIpv4(text, groupStart, end, four, 0)) return null;
      groups.push((four[0]! << 8) | four[1]!, (four[2]! << 8) | four[3]!);
      return groups;
    }
    const length = i - groupStart;
    if (length < 1 || length > 4) return null;
    let value = 0;
    for (let j = groupStart; j < i; j++) {
      const digit = hexValue(text.charCodeAt(j));
      if (digit < 0) return null;
      value = value * 16 + digit;
    }
    groups.push(value);
    if (groups.length > 8) return null;
    groupStart = i + 1;
  }
  return groups;
}

/** IPv6 in text[start, end), without brackets or zone id; 16 bytes, or null. */
function readIpv6(text: string, start: number, end: number): Uint8Array | null {
  const gap = text.indexOf("::", start);
  let groups: number[];
  if (gap !== -1 && gap < end) {
    // A second `::` (":::" included) is malformed.
    const again = text.indexOf("::", gap + 1);
    if (again !== -1 && again < end) return null;
    const head = readGroups(text, start, gap, false);
    const tail = readGroups(text, gap + 2, end, true);
    if (!head || !tail || head.length + tail.length > 7) return null;
    groups = [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail];
  } else {
    const all = readGroups(text, start, end, true);
    if (!all || all.length !== 8) return null;
    groups = all;
  }
  const bytes = new Uint8Array(16);
  for (let i = 0; i < 8; i++) {
    bytes[2 * i] = groups[i]! >> 8;
    bytes[2 * i + 1] = groups[i]! & 0xff;
  }
  return bytes;
}

/** A port after an address: 1–5 digits, at most 65535. */
function isPort(text: string, start: number, end: number): boolean {
  if (end - start < 1 || end - start > 5) return false;
  let value = 0;
  for (let i = start; i < end; i++) {
    const code = text.charCodeAt(i);
    if (!isDigit(code)) return false;
    value = value * 10 + (code - 48);
  }
  return value <= 65535;
}

/** IPv4-mapped IPv6 (`::ffff:a.b.c.d`) as the IPv4 address it is; anything else as it is. */
function normalised(bytes: Uint8Array): IpAddress {
  if (bytes.length === 4) return { version: 4, bytes };
  for (let i = 0; i < 10; i++) if (bytes[i] !== 0) return { version: 6, bytes };
  if (bytes[10] === 0xff && bytes[11] === 0xff) return { version: 4, bytes: bytes.slice(12) };
  return { version: 6, bytes };
}

/** IPv6 with an optional zone id (`fe80::1%eth0`: the zone is dropped; an empty one is malformed). */
function readIpv6WithZone(text: string, start: number, end: number): Uint8Array | null {
  const zone = text.indexOf("%", start);
  if (zone !== -1 && zone < end) {
    if (zone === end - 1) return null;
    return readIpv6(text, start, zone);
  }
  return readIpv6(text, start, end);
}

/**
 * An address as written in a socket's remote address, a forwarding header or TRUSTED_PROXIES:
 * `203.0.113.7`, `203.0.113.7:443`, `2001:db8::1`, `[2001:db8::1]`, `[2001:db8::1]:443`,
 * `fe80::1%eth0`, `::ffff:203.0.113.7` (IPv4). Null for anything else.
 */
export function parseIpAddress(text: string): IpAddress | null {
  const end = text.length;
  if (end === 0 || end > MAX_ADDRESS_LENGTH) return null;
  if (text.charCodeAt(0) === 91 /* [ */) {
    const close = text.indexOf("]");
    if (close === -1) return null;
    const bytes = readIpv6WithZone(text, 1, close);
    if (!bytes) return null;
    if (close + 1 !== end && !(text.charCodeAt(close + 1) === 58 && isPort(text, close + 2, end))) return null;
    return normalised(bytes);
  }
  const colon = text.indexOf(":");
  if (colon === -1) {
    const bytes = new Uint8Array(4);
    return readIpv4(text, 0, end, bytes, 0) ? normalised(bytes) : null;
  }
  // One colon after a dotted quad: IPv4 with a port (some proxies write one).
  if (text.indexOf(":", colon + 1) === -1) {
    const bytes = new Uint8Array(4);
    return readIpv4(text, 0, colon, bytes, 0) && isPort(text, colon + 1, end) ? normalised(bytes) : null;
  }
  const bytes = readIpv6WithZone(text, 0, end);
  return bytes ? normalised(bytes) : null;
}

/** The canonical text of an address: dotted IPv4, or RFC 5952 IPv6. */
export function formatIpAddress(ip: IpAddress): string {
  const b = ip.bytes;
  if (ip.version === 4) return `${b[0]}.${b[1]}.${b[2]}.${b[3]}`;
  const groups: number[] = [];
  for (let i = 0; i < 8; i++) groups.push((b[2 * i]! << 8) | b[2 * i + 1]!);
  // The longest run of two or more zero groups (the first of equals) becomes "::".
  let bestStart = -1;
  let bestLength = 1;
  for (let i = 0; i < 8;) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLength) {
      bestStart = i;
      bestLength = j - i;
    }
    i = j;
  }
  const hex = (from: number, to: number) =>
    groups
      .slice(from, to)
      .map((group) => group.toString(16))
      .join(":");
  if (bestStart === -1) return hex(0, 8);
  return `${hex(0, bestStart)}::${hex(bestStart + bestLength, 8)}`;
}

/** `parseIpAddress` then `formatIpAddress`: the canonical text, or null. */
export function normaliseIpAddress(text: string): string | null {
  const ip = parseIpAddress(text);
  return ip ? formatIpAddress(ip) : null;
}

/**
 * One entry of TRUSTED_PROXIES: an address (all its bits) or `address/prefix`, written plainly (no
 * brackets, zone or port). An IPv4-mapped range (`::ffff:10.0.0.0/104`) is the IPv4 range it maps
 * (10.0.0.0/8): addresses are compared after normalisation. Bits past the prefix are ignored.
 */
function parseRange(text: string): AddressRange | null {
  const slash = text.indexOf("/");
  const address = slash === -1 ? text : text.slice(0, slash);
  if (address.length === 0 || address.length > MAX_ADDRESS_LENGTH) return null;
  let written: Uint8Array | null = new Uint8Array(4);
  if (address.indexOf(":") === -1) {
    if (!readIpv4(address, 0, address.length, written, 0)) return null;
  } else {
    written = readIpv6(address, 0, address.length);
    if (!written) return null;
  }
  let prefix = written.length * 8;
  if (slash !== -1) {
    const digits = text.slice(slash + 1);
    if (!isPort(digits, 0, digits.length) || digits.length > 3 || (digits.length > 1 && digits.startsWith("0"))) return null;
    prefix = Number(digits);
    if (prefix > written.length * 8) return null;
  }
  const ip = normalised(written);
  if (ip.version === 4 && written.length === 16) prefix -= 96;
  if (prefix < 0) return null;
  const bytes = ip.bytes.slice();
  for (let bit = prefix; bit < bytes.length * 8; bit++) bytes[bit >> 3]! &= ~(0x80 >> (bit & 7));
  return { version: ip.version, bytes, prefix };
}

/**
 * TRUSTED_PROXIES: comma-separated IPv4 or IPv6 addresses or CIDR ranges (`10.0.0.1`,
 * `10.0.0.0/8`, `2001:db8::/32`, `::1`). Unset or empty: none. Throws, naming the variable and
 * the entry, on anything else, so a typo fails the start.
 */
export function parseTrustedProxies(text: string | undefined, variable = "TRUSTED_PROXIES"): AddressRange[] {
  const ranges: AddressRange[] = [];
  for (const raw of (text ?? "").split(",")) {
    const entry = raw.trim();
    if (entry === "") continue;
    const range = parseRange(entry);
    if (!range)
      throw new Error(
        `${variable} must list IP addresses or CIDR ranges, comma-separated (10.0.0.1, 10.0.0.0/8, 2001:db8::/32); '${entry.slice(0, 60)}' is not one.`,
      );
    ranges.push(range);
  }
  return ranges;
}

/** Whether `ip` is in one of `ranges`. */
export function inRanges(ranges: readonly AddressRange[], ip: IpAddress): boolean {
  return ranges.some((range) => {
    if (range.version !== ip.version) return false;
    const whole = range.prefix >> 3;
    for (let i = 0; i < whole; i++) if (range.bytes[i] !== ip.bytes[i]) return false;
    const rest = range.prefix & 7;
    if (rest === 0) return true;
    const mask = (0xff << (8 - rest)) & 0xff;
    return (range.bytes[whole]! & mask) === (ip.bytes[whole]! & mask);
  });
}

/**
 * The client of a Node connection. `remoteAddress` is the socket's peer; unless it is a trusted
 * proxy, it is the client, and X-Forwarded-For (which anyone can send) is ignored. From a trusted
 * proxy, X-Forwarded-For is walked from the right: each entry is what the hop to its right saw
 * connecting to it; the first entry that is not itself a trusted proxy is the client.
 *
 * Where the walk cannot go on (an entry that is no address, `unknown` or `_hidden` included; an
 * empty entry; an entry cut by MAX_FORWARDED_LENGTH; MAX_FORWARDED_HOPS entries walked, all
 * trusted; the header missing or exhausted) the answer is the last trusted hop reached: the proxy
 * whose view could not be read stands for its clients. That is never an address a client wrote,
 * so nothing a client sends can choose its bucket. Null only when the socket has no address
 * (it has closed).
 */
export function clientAddressFromConnection(input: {
  remoteAddress: string | undefined;
  forwardedFor: string | null;
  trustedProxies: readonly AddressRange[];
}): string | null {
  const remote = input.remoteAddress ? parseIpAddress(input.remoteAddress) : null;
  if (!remote) return null;
  const header = input.forwardedFor;
  if (!header || input.trustedProxies.length === 0 || !inRanges(input.trustedProxies, remote)) return formatIpAddress(remote);
  const truncated = header.length > MAX_FORWARDED_LENGTH;
  const tail = truncated ? header.slice(header.length - MAX_FORWARDED_LENGTH) : header;
  let current = remote;
  let end = tail.length;
  for (let hop = 0; hop < MAX_FORWARDED_HOPS && end >= 0; hop++) {
    const comma = end === 0 ? -1 : tail.lastIndexOf(",", end - 1);
    // The left-most entry of a cut header may be cut itself: it is not read.
    if (comma === -1 && truncated) break;
    const entry = tail.slice(comma + 1, end).trim();
    const ip = parseIpAddress(entry);
    if (!ip) break;
    current = ip;
    if (!inRanges(input.trustedProxies, ip)) break;
    if (comma === -1) break;
    end = comma;
  }
  return formatIpAddress(current);
}

/**
 * The client of a Worker request: `CF-Connecting-IP`, which Cloudflare sets at its edge (a value
 * a client sends is replaced), normalised; null without one (local tools that do not set it).
 */
export function clientAddressFromCloudflare(header: string | null): string | null {
  if (!header) return null;
  return normaliseIpAddress(header.trim());
}

/**
 * The throttle's bucket of a client address: IPv4 as it is, IPv6 by its /64
 * (`2001:db8:1:2::/64`), and UNKNOWN_ADDRESS_BUCKET for a request whose address is not known,
 * which all such requests share.
 */
export function addressBucket(address: string | null): string {
  const ip = address === null ? null : parseIpAddress(address);
  if (!ip) return UNKNOWN_ADDRESS_BUCKET;
  if (ip.version === 4) return formatIpAddress(ip);
  const prefix = ip.bytes.slice();
  prefix.fill(0, 8);
  return `${formatIpAddress({ version: 6, bytes: prefix })}/64`;
}
