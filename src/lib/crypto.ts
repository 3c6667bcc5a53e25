/**
 * Hashing and MAC helpers. `node:crypto` runs natively in Node and in workerd (nodejs_compat),
 * and its synchronous calls cost a few microseconds where WebCrypto's promise round trip costs
 * tens (measured by the benchmark on every authenticated request and every cursor).
 */
import { createHash, createHmac, timingSafeEqual } from "node:crypto";

const encoder = new TextEncoder();

export function sha256Hex(value: string): string {
  return createHash("sha256").update(value, "utf8").digest("hex");
}

export function hmacSha256(secret: string, data: Uint8Array): Uint8Array {
  return new Uint8Array(createHmac("sha256", secret).update(data).digest());
}

/** Constant-time comparison of two byte strings (false for different lengths). */
export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

export function base64UrlEncode(bytes: Uint8Array): string {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** Strict base64url decoding: returns null for anything that is not canonical base64url. */
export function base64UrlDecode(text: string): Uint8Array | null {
  if (!/^[A-Za-z0-9_-]*$/.test(text) || text.length % 4 === 1) return null;
  const padded = text.replace(/-/g, "+").replace(/_/g, "/") + "=".repeat((4 - (text.length % 4)) % 4);
  let binary: string;
  try {
    binary = atob(padded);
  } catch {
    return null;
  }
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  // Reject non-canonical encodings (stray bits in the last character): re-encoding must give the input back.
  return base64UrlEncode(bytes) === text ? bytes : null;
}

export function utf8(text: string): Uint8Array {
  return encoder.encode(text);
}

/** Compares two secrets without leaking where they differ: both sides are hashed to equal length, then compared in constant time. */
export function secretsEqual(a: string, b: string): boolean {
  return timingSafeEqual(createHash("sha256").update(a).digest(), createHash("sha256").update(b).digest());
}
