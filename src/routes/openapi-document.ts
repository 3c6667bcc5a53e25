/**
 * The OpenAPI documents the service serves (/api/v1, /uploads/v1, /admin/v1): the top of each,
 * and how each is answered (computed once, with an ETag and 304s).
 */
import type { Context } from "hono";
import { sha256Hex } from "../lib/crypto";
import { namesTag, parseIfNoneMatch } from "../lib/entity-tags";

/** The top of each OpenAPI document the service serves (/api/v1, /uploads/v1). */
export type DocumentTag = { name: string; description: string };

export function documentConfig(options: { title: string; description: string; serverUrl: string; tags: DocumentTag[] }) {
  return {
    openapi: "3.1.0",
    info: {
      title: options.title,
      version: "1.0.0",
      license: { name: "Proprietary", identifier: "LicenseRef-Proprietary" },
      description: options.description,
    },
    servers: [{ url: options.serverUrl, description: "This server" }],
    tags: options.tags,
  };
}

/** A document as served: its JSON text, computed once, and the strong tag of those bytes. */
export type ServedDocument = { text: string; etag: string };

/**
 * The document built at its first request and kept for the process's or isolate's life (the app
 * is built once per process or isolate, and its routes do not change after): every later
 * request, a 304 included, costs neither the document's generation nor its serialization.
 */
export function servedOnce(build: () => unknown): () => ServedDocument {
  let served: ServedDocument | undefined;
  return () => {
    if (served) return served;
    const text = JSON.stringify(build());
    served = { text, etag: `"${sha256Hex(text).slice(0, 32)}"` };
    return served;
  };
}

/**
 * The document's answer: 200 with the JSON and its `ETag`, or 304 with no body when
 * `If-None-Match` names the tag (weak comparison, or `*`), like every GET of /api/v1
 * (docs/conditional-requests.md). The tag is a hash of the bytes: the same for every caller, and
 * a new one whenever a release changes the document. `no-cache`: keep it, revalidate before use.
 */
export function documentResponse(c: Context, document: ServedDocument, headers: Record<string, string> = {}): Response {
  const condition = parseIfNoneMatch(c.req.header("if-none-match"));
  const common = { ETag: document.etag, "Cache-Control": "no-cache", ...headers };
  if (condition && (condition.any || namesTag(condition, document.etag))) return c.body(null, 304, common);
  return c.body(document.text, 200, { "Content-Type": "application/json", ...common });
}
