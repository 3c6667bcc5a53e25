/**
 * Entity tags and `If-None-Match` as RFC 9110 (8.8.3, 13.1.2) defines them: a list of tags, each
 * `"…"` or `W/"…"`, or `*`. A GET compares weakly: `W/"x"` matches `"x"`.
 */

/** What an `If-None-Match` field asks: any current representation (`*`), or none of these tags. */
export type IfNoneMatch = { any: true } | { any: false; tags: string[] };

// entity-tag = [ "W/" ] DQUOTE *etagc DQUOTE, etagc = %x21 / %x23-7E / obs-text.
const ENTITY_TAG = /^(?:W\/)?"([\x21\x23-\x7e\x80-\xff]*)"/;

/**
 * The field's condition, or null when absent or unreadable (RFC 9110: a recipient ignores a
 * condition it cannot parse, and answers as if unconditional).
 */
export function parseIfNoneMatch(field: string | undefined): IfNoneMatch | null {
  if (field === undefined) return null;
  const text = field.trim();
  if (text === "*") return { any: true };
  const tags: string[] = [];
  // A list's elements are separated by commas; empty elements are allowed (RFC 9110, 5.6.1).
  let rest = text.replace(/^(?:,[ \t]*)+/, "");
  while (rest.length > 0) {
    const match = ENTITY_TAG.exec(rest);
    if (!match) return null;
    tags.push(match[1]!);
    rest = rest.slice(match[0].length);
    const separator = /^[ \t]*(?:,[ \t]*)+/.exec(rest);
    if (separator) rest = rest.slice(separator[0].length);
    else if (rest.trim() !== "") return null;
    else rest = "";
  }
  return tags.length > 0 ? { any: false, tags } : null;
}

/** The opaque part of a tag as this service writes it (`"…"`). */
function opaqueTag(etag: string): string {
  return etag.replace(/^W\//, "").slice(1, -1);
}

/** Weak comparison of the field's tags with the current one; `*` is answered by the caller, which knows whether the resource exists. */
export function namesTag(condition: IfNoneMatch, etag: string): boolean {
  return !condition.any && condition.tags.includes(opaqueTag(etag));
}

/** Whether an `If-None-Match` field names `etag`, or is `*` (for a resource that exists): a 304 is due. */
export function ifNoneMatchNames(field: string | undefined, etag: string): boolean {
  const condition = parseIfNoneMatch(field);
  return condition !== null && (condition.any || namesTag(condition, etag));
}
