/**
 * One definition per list. A list names itself, orders its rows newest first by keyset columns,
 * finds a row's position, and maps a row to its API item. Its filters are one object, keyed as
 * in the query string and the path (`project_id`, `status`…), that travels from the route to the
 * service inside a `ListRequest`: the cursor is bound to that same object, so a filter the query
 * reads is a filter the cursor carries. From the definition follow the cursor binding
 * (`listing`), the query's keyset condition and order (`after`, `orderBy`, `fetchLimit`), and the
 * page (`page`); the route turns the page into the body with `pageBody`.
 */
import { type SQL, asc, desc, sql } from "drizzle-orm";
import type { AnyPgColumn } from "drizzle-orm/pg-core";
import {
  type CursorCodec,
  type KeysetPosition,
  type Listing,
  NO_TIMESTAMP,
  type Page,
  idBefore,
  keysetBefore,
  parseLimit,
  toPage,
} from "./pagination";

/** A list's filters: names as in the query string or path; null for "not filtered". */
export type ListFilters = Record<string, string | null>;

/**
 * How rows are ordered: newest first by (timestamp, id), by an id alone (rows that arrive
 * together), or by a sort key and the id (ties broken by the id in the same direction). A sort
 * key is an SQL expression that is never null (coalesce it), of the given Postgres type.
 */
type KeysetOrder =
  | { ts: AnyPgColumn; id: AnyPgColumn; idKind: "uuid" | "bigint"; key?: undefined }
  | { ts?: undefined; id: AnyPgColumn; idKind: "bigint"; key?: undefined }
  | { ts?: undefined; key: SortKey; id: AnyPgColumn; idKind: "uuid" | "bigint" };

export type SortKey = { expr: SQL; type: "float8" | "int4" | "text" | "timestamptz"; direction: "asc" | "desc" };

/** One page asked of one list: who asks, with which filters, how many rows, after which row. */
export type ListRequest<F extends ListFilters> = {
  organizationId: string;
  filters: F;
  limit: number;
  after: KeysetPosition | null;
};

export type ListSpec<Row, Item, Context> = {
  /** The list's name in its cursors: a cursor of one list is refused by every other. */
  name: string;
  order: KeysetOrder;
  /** The row's keyset position; for (timestamp, id) orders, the same two columns as `order`. */
  positionOf: (row: Row) => { ts?: Date; id: string | number; k?: string | number };
  /** Row → API item; `context` is what the item needs besides its row (web app URL, now, a parent). */
  present: (row: Row, context: Context) => Item;
};

export type ListDefinition<F extends ListFilters, Row, Item, Context> = {
  readonly name: string;
  /** What the list's cursors are bound to: the list, the organization and every filter. */
  listing(request: ListRequest<F>): Listing;
  /** The keyset condition for the rows after the request's cursor (undefined on the first page). */
  after(request: ListRequest<F>): SQL | undefined;
  /** ORDER BY, newest first. */
  readonly orderBy: SQL[];
  /** One row more than the page, to know whether another page follows. */
  fetchLimit(request: ListRequest<F>): number;
  page(rows: Row[], request: ListRequest<F>, context: Context): Page<Item>;
};

export function defineList<F extends ListFilters, Row, Item, Context = void>(
  spec: ListSpec<Row, Item, Context>,
): ListDefinition<F, Row, Item, Context> {
  const { order } = spec;
  return {
    name: spec.name,
    listing: (request) => ({ name: spec.name, organizationId: request.organizationId, filters: request.filters, idKind: order.idKind }),
    after: (request) => {
      if (!request.after) return undefined;
      if (order.key) {
        const { expr, type, direction } = order.key;
        const k = request.after.k ?? null;
        return sql`(${expr}, ${order.id}) ${sql.raw(direction === "desc" ? "<" : ">")} (${k}::${sql.raw(type)}, ${request.after.id}::${sql.raw(order.idKind)})`;
      }
      return order.ts ? keysetBefore(order.ts, order.id, request.after, order.idKind) : idBefore(order.id, request.after);
    },
    orderBy: order.key
      ? order.key.direction === "desc"
        ? [desc(order.key.expr), desc(order.id)]
        : [asc(order.key.expr), asc(order.id)]
      : order.ts
        ? [desc(order.ts), desc(order.id)]
        : [desc(order.id)],
    fetchLimit: (request) => request.limit + 1,
    page: (rows, request, context) =>
      toPage(
        rows,
        request.limit,
        (row) => {
          const position = spec.positionOf(row);
          return position.k === undefined
            ? { ts: position.ts ?? NO_TIMESTAMP, id: position.id }
            : { ts: NO_TIMESTAMP, id: position.id, k: position.k };
        },
        (row) => spec.present(row, context),
      ),
  };
}

/**
 * A list request from the query string's `limit` and `cursor` (400 `invalid_request` for a bad
 * limit, or a cursor not issued for this list, organization and filters).
 */
export function readListRequest<F extends ListFilters>(
  codec: CursorCodec,
  list: Pick<ListDefinition<F, unknown, unknown, never>, "listing">,
  scope: { organizationId: string; filters: F },
  query: { limit?: string; cursor?: string },
): ListRequest<F> {
  const request: ListRequest<F> = {
    organizationId: scope.organizationId,
    filters: scope.filters,
    limit: parseLimit(query.limit),
    after: null,
  };
  if (query.cursor !== undefined) request.after = codec.decode(list.listing(request), query.cursor);
  return request;
}

/** `{data, pagination: {next_cursor, has_more}}`: the shape of every list. */
export function pageBody<F extends ListFilters, T>(
  codec: CursorCodec,
  list: Pick<ListDefinition<F, unknown, unknown, never>, "listing">,
  request: ListRequest<F>,
  page: Page<T>,
) {
  return {
    data: page.items,
    pagination: {
      next_cursor: page.next ? codec.encode(list.listing(request), page.next) : null,
      has_more: page.next !== null,
    },
  };
}
