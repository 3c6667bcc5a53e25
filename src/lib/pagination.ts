/**
 * The one pagination mechanism of every list: keyset pages, newest first, behind opaque cursors.
 *
 * A cursor is `base64url(payload) "." base64url(HMAC-SHA256(secret, payload))`. The payload names
 * the listing, the organization and the filters it was issued for, and the position of the last
 * row returned. Anything edited, truncated, signed with another secret or replayed on another
 * listing, organization or filter set is rejected with 400 `invalid_request`. The page size is
 * not bound: `limit` may change from one page to the next.
 */
import { type SQL, sql } from "drizzle-orm";
import type { AnyPgColumn } from "drizzle-orm/pg-core";
import { base64UrlDecode, base64UrlEncode, bytesEqual, hmacSha256, utf8 } from "./crypto";
import { ApiError } from "./errors";
import { isUuid } from "./ids";

export const DEFAULT_PAGE_SIZE = 25;
export const MAX_PAGE_SIZE = 100;
const MAX_CURSOR_LENGTH = 1024;

/** The last row of a page: its timestamp (lists by time) or sort key (lists by another column), and its id. */
export type KeysetPosition = { ts: Date; id: string | number; k?: string | number };
export type Page<T> = { items: T[]; next: KeysetPosition | null };

/** Identifies one listing precisely enough that its cursors cannot be used anywhere else. */
export type Listing = {
  name: string;
  organizationId: string;
  filters: Record<string, string | null>;
  idKind: "uuid" | "bigint";
};

/** Parses `limit`: absent → 25; above 100 → 100; anything but a positive integer → 400. */
export function parseLimit(raw: string | undefined): number {
  if (raw === undefined) return DEFAULT_PAGE_SIZE;
  if (!/^[0-9]+$/.test(raw) || /^0+$/.test(raw)) {
    throw new ApiError("invalid_request", "limit must be an integer between 1 and 100.", {
      details: [{ field: "limit", message: "must be an integer of at least 1 (values above 100 are capped)" }],
    });
  }
  const value = Number(raw);
  return Math.min(value, MAX_PAGE_SIZE);
}

function invalidCursor(): ApiError {
  return new ApiError("invalid_request", "cursor is invalid: pass it exactly as received, on the listing that issued it.", {
    details: [{ field: "cursor", message: "is not a cursor issued for this listing" }],
  });
}

export class CursorCodec {
  readonly #secret: string;

  constructor(secret: string) {
    if (secret.length < 16) throw new Error("The cursor secret must be at least 16 characters long.");
    this.#secret = secret;
  }

  encode(listing: Listing, position: KeysetPosition): string {
    const payload = utf8(JSON.stringify(this.#payload(listing, position)));
    const signature = hmacSha256(this.#secret, payload);
    return `${base64UrlEncode(payload)}.${base64UrlEncode(signature)}`;
  }

  decode(listing: Listing, cursor: string): KeysetPosition {
    if (cursor.length === 0 || cursor.length > MAX_CURSOR_LENGTH) throw invalidCursor();
    const [payloadPart, signaturePart, ...rest] = cursor.split(".");
    if (payloadPart === undefined || signaturePart === undefined || rest.length > 0) throw invalidCursor();
    const payload = base64UrlDecode(payloadPart);
    const signature = base64UrlDecode(signaturePart);
    if (!payload || !signature) throw invalidCursor();
    if (!bytesEqual(signature, hmacSha256(this.#secret, payload))) throw invalidCursor();

    let decoded: unknown;
    try {
      decoded = JSON.parse(new TextDecoder().decode(payload));
    } catch {
      throw invalidCursor();
    }
    const position = this.#positionFrom(decoded, listing);
    if (!position) throw invalidCursor();
    return position;
  }

  #payload(listing: Listing, position: KeysetPosition) {
    return {
      v: 1,
      l: listing.name,
      o: listing.organizationId,
      f: canonicalFilters(listing.filters),
      t: position.ts.toISOString(),
      i: position.id,
      ...(position.k === undefined ? {} : { k: position.k }),
    };
  }

  #positionFrom(decoded: unknown, listing: Listing): KeysetPosition | null {
    if (typeof decoded !== "object" || decoded === null) return null;
    const p = decoded as Record<string, unknown>;
    if (p.v !== 1 || p.l !== listing.name || p.o !== listing.organizationId) return null;
    if (p.f !== canonicalFilters(listing.filters)) return null;
    if (typeof p.t !== "string") return null;
    const ts = new Date(p.t);
    if (Number.isNaN(ts.getTime())) return null;
    if (listing.idKind === "uuid" && !(typeof p.i === "string" && isUuid(p.i))) return null;
    if (listing.idKind === "bigint" && !(typeof p.i === "number" && Number.isSafeInteger(p.i))) return null;
    if (p.k !== undefined && typeof p.k !== "string" && !(typeof p.k === "number" && Number.isFinite(p.k))) return null;
    return p.k === undefined ? { ts, id: p.i as string | number } : { ts, id: p.i as string | number, k: p.k as string | number };
  }
}

function canonicalFilters(filters: Record<string, string | null>): string {
  return JSON.stringify(
    Object.keys(filters)
      .sort()
      .map((key) => [key, filters[key] ?? null]),
  );
}

/**
 * `(ts, id) < (position)` as a row comparison, so Postgres walks the matching
 * `(…, ts DESC, id DESC)` index instead of sorting.
 */
export function keysetBefore(tsColumn: AnyPgColumn, idColumn: AnyPgColumn, position: KeysetPosition, idKind: Listing["idKind"]): SQL {
  return sql`(${tsColumn}, ${idColumn}) < (${position.ts.toISOString()}::timestamptz, ${position.id}::${sql.raw(idKind)})`;
}

/** `id < position.id`, for lists ordered by an id alone (suites by number, cases by id, within one run). */
export function idBefore(idColumn: AnyPgColumn, position: KeysetPosition): SQL {
  return sql`${idColumn} < ${position.id}`;
}

/** Lists ordered by id alone still carry a timestamp in their cursors; this fixed one stands in. */
export const NO_TIMESTAMP = new Date(0);

/** Turns `limit + 1` fetched rows into one page and the position of its last row. */
export function toPage<Row, Item>(
  rows: Row[],
  limit: number,
  positionOf: (row: Row) => KeysetPosition,
  present: (row: Row) => Item,
): Page<Item> {
  const hasMore = rows.length > limit;
  const pageRows = hasMore ? rows.slice(0, limit) : rows;
  const last = pageRows.at(-1);
  return { items: pageRows.map(present), next: hasMore && last !== undefined ? positionOf(last) : null };
}
