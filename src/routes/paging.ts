import { type CursorCodec, type Listing, type Page, type PageRequest, parseLimit } from "../lib/pagination";

/** Turns `limit`/`cursor` query values into a page request for one listing (400 on anything invalid). */
export async function readPage(codec: CursorCodec, listing: Listing, query: { limit?: string; cursor?: string }): Promise<PageRequest> {
  const limit = parseLimit(query.limit);
  const after = query.cursor === undefined ? null : await codec.decode(listing, query.cursor);
  return { limit, after };
}

/** `{data, pagination: {next_cursor, has_more}}`: the shape of every list. */
export async function pageBody<T>(codec: CursorCodec, listing: Listing, page: Page<T>) {
  return {
    data: page.items,
    pagination: {
      next_cursor: page.next ? await codec.encode(listing, page.next) : null,
      has_more: page.next !== null,
    },
  };
}
