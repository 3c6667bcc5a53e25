/**
 * Secret tokens: API keys (`cta_…`) and upload tokens (`ctu_…`).
 *
 * Format: `<prefix>_<43 base62 random chars (≈256 bits)><6 base62 chars of CRC-32>`, as GitHub's
 * token format does. The distinct prefix names the kind (and lets secret scanners find leaked
 * keys); the checksum rejects typos and garbage before any database lookup. Only the SHA-256
 * of a token is stored. CRC-32 is a ten-line, fixed-polynomial function and is written here
 * rather than pulled in as a dependency so the same code runs in Node and workerd.
 */
import { sha256Hex } from "./crypto";

const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const RANDOM_LENGTH = 43;
const CHECKSUM_LENGTH = 6;

export const TOKEN_KINDS = { apiKey: "cta", uploadToken: "ctu" } as const;
export type TokenKind = keyof typeof TOKEN_KINDS;
/** Base62 characters after a token's `<prefix>_`: the random part and the checksum. */
export const TOKEN_BODY_LENGTH = RANDOM_LENGTH + CHECKSUM_LENGTH;

// Pure: a bundle that does not use crc32 (the uploader CLI) drops the table.
const CRC_TABLE = /* @__PURE__ */ (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

export function crc32(text: string): number {
  let crc = 0xffffffff;
  for (let i = 0; i < text.length; i++) crc = CRC_TABLE[(crc ^ text.charCodeAt(i)) & 0xff]! ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

function base62Fixed(value: number, length: number): string {
  let out = "";
  let rest = value;
  for (let i = 0; i < length; i++) {
    out = ALPHABET[rest % 62] + out;
    rest = Math.floor(rest / 62);
  }
  return out;
}

function randomBase62(length: number): string {
  let out = "";
  // Rejection sampling keeps every character uniform: bytes ≥ 248 (= 4 × 62) are discarded.
  while (out.length < length) {
    const bytes = crypto.getRandomValues(new Uint8Array(length * 2));
    for (const byte of bytes) {
      if (byte < 248 && out.length < length) out += ALPHABET[byte % 62];
    }
  }
  return out;
}

export function generateToken(kind: TokenKind): string {
  const body = `${TOKEN_KINDS[kind]}_${randomBase62(RANDOM_LENGTH)}`;
  return body + base62Fixed(crc32(body), CHECKSUM_LENGTH);
}

/**
 * True when the token has the right prefix, length and alphabet; the checksum is not checked.
 * The uploader CLI warns about a token without this shape.
 */
export function hasTokenShape(kind: TokenKind, token: string): boolean {
  const prefix = `${TOKEN_KINDS[kind]}_`;
  if (token.length !== prefix.length + TOKEN_BODY_LENGTH || !token.startsWith(prefix)) return false;
  return /^[0-9A-Za-z]+$/.test(token.slice(prefix.length));
}

/** True when the token has the right prefix, length, alphabet and checksum. No I/O. */
export function isWellFormedToken(kind: TokenKind, token: string): boolean {
  if (!hasTokenShape(kind, token)) return false;
  const body = token.slice(0, -CHECKSUM_LENGTH);
  return base62Fixed(crc32(body), CHECKSUM_LENGTH) === token.slice(-CHECKSUM_LENGTH);
}

export const hashToken = sha256Hex;

/** What may be shown of a key: its kind and first few random characters. */
export function displayPrefix(token: string): string {
  return token.slice(0, 8);
}
