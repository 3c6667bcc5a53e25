/**
 * Webhook signatures, Stripe-style: `CTA-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret,
 * "<t>.<body>")>`. The timestamp is signed with the body so a captured delivery cannot be replayed
 * later; receivers should reject timestamps older than 5 minutes and compare in constant time.
 */
import { bytesEqual, hmacSha256, utf8 } from "../lib/crypto";

export const SIGNATURE_HEADER = "CTA-Signature";
const SIGNATURE_TOLERANCE_SECONDS = 300;

const toHex = (bytes: Uint8Array) => Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");

export function signatureHeader(secret: string, timestampSeconds: number, body: string): string {
  return `t=${timestampSeconds},v1=${toHex(hmacSha256(secret, utf8(`${timestampSeconds}.${body}`)))}`;
}

/** What a receiver does; used by the tests' receiver and documented for integrators. */
export function verifySignature(secret: string, header: string | null, body: string, nowSeconds: number): boolean {
  if (!header) return false;
  const fields = Object.fromEntries(header.split(",").map((part) => part.split("=", 2) as [string, string]));
  const timestamp = Number(fields.t);
  if (!Number.isInteger(timestamp) || Math.abs(nowSeconds - timestamp) > SIGNATURE_TOLERANCE_SECONDS || !fields.v1) return false;
  const expected = utf8(signatureHeader(secret, timestamp, body).split("v1=")[1]!);
  return bytesEqual(expected, utf8(fields.v1));
}
