/**
 * The edge Worker (wrangler.edge.toml): runs at the client's Cloudflare location, in front of the
 * placed Worker (wrangler.toml, next to the database), which it reaches through a service binding.
 * It answers the reads integrators and CI repeat from the organization's cache object
 * (src/worker/edge-cache-object.ts) without a database round trip, and forwards every other
 * request unchanged (its body streamed, its headers kept, CF-Connecting-IP included). Design and
 * invariants: docs/edge-path.md, "Edge-cached reads".
 *
 * A cached read: the credential's SHA-256 → (its counter, its organization), learned from the
 * placed Worker's answer to an earlier request of this isolate; the organization's object looks up
 * (credential, path and query, Accept) and, on a hit, has the credential's counter (its Durable
 * Object, which also holds the revoked mark) admit the request, in one call; the stored answer is
 * served with that request's RateLimit headers. A miss is forwarded, and its 200 stored after the
 * answer is sent, with the ticket the lookup gave.
 */
import { ifNoneMatchNames } from "../../lib/entity-tags";
import { hashToken } from "../../lib/keys";
import { rateLimitHeaders } from "../../lib/rate-limit";
import type { KeyAdmission } from "../../auth/key-state";
import { EDGE_CREDENTIAL_HEADER, EDGE_EXPIRES_HEADER, EDGE_REQUEST_HEADER, cacheObjectName } from "../edge-cache-bracket";
import type { EdgeCacheObject, StoredAnswer } from "../edge-cache-object";

export interface EdgeEnv {
  /** The placed Worker (service binding). */
  ORIGIN: Fetcher;
  /** The placed Worker's cache objects, bound by script_name (each reaches the credentials' counters itself). */
  EDGE_CACHE: DurableObjectNamespace<EdgeCacheObject>;
}

/** A credential as the placed Worker admitted it: which counter object counts it, and its organization. */
type KnownCredential = { counter: "key" | "upload"; counterId: string; organizationId: string };

/** The GETs answered from the cache: exact paths (their query is part of the key). */
const CACHED_PATHS = new Set(["/api/v1/organization", "/uploads/v1/quarantined_tests"]);
/**
 * The OpenAPI documents: public, the same for every client, and constant for a deployment of the
 * placed Worker, so this isolate keeps them once read (README.md deploys the edge Worker after the
 * placed one, so no isolate outlives the documents it holds).
 */
const DOCUMENT_PATHS = new Set(["/api/v1/openapi.json", "/uploads/v1/openapi.json"]);
/**
 * Headers of an answer never stored: those of one request, and its encoding (the body is stored
 * decoded, and the next client may not accept the first one's encoding).
 */
const PER_REQUEST_HEADERS = ["request-id", "ratelimit", "ratelimit-policy", "set-cookie", "date", "content-length", "content-encoding"];
const BEARER = /^Bearer[ \t]+([^\s]+)[ \t]*$/i;
const MAX_CREDENTIALS = 10_000;

/** Insertion-ordered, bounded: SHA-256 of a credential → what the placed Worker said of it. The mapping never changes for a credential. */
class CredentialMap {
  readonly #entries = new Map<string, KnownCredential>();
  get(hash: string) {
    return this.#entries.get(hash);
  }
  set(hash: string, credential: KnownCredential) {
    this.#entries.delete(hash);
    this.#entries.set(hash, credential);
    if (this.#entries.size > MAX_CREDENTIALS) this.#entries.delete(this.#entries.keys().next().value!);
  }
  delete(hash: string) {
    this.#entries.delete(hash);
  }
}

function parseCredential(header: string | null): KnownCredential | null {
  const [counter, counterId, organizationId] = (header ?? "").split(" ");
  if ((counter !== "key" && counter !== "upload") || !counterId || !organizationId) return null;
  return { counter, counterId, organizationId };
}

/**
 * The request as the placed Worker gets it: unchanged but for the edge's own header (a client's
 * copies of the edge's headers removed). A miss whose answer may be stored asks unconditionally,
 * so that a client that always revalidates still fills the cache; the edge applies the condition.
 */
function originRequest(request: Request, unconditional = false): Request {
  const forwarded = new Request(request);
  for (const name of [EDGE_REQUEST_HEADER, EDGE_CREDENTIAL_HEADER, EDGE_EXPIRES_HEADER]) forwarded.headers.delete(name);
  if (unconditional) forwarded.headers.delete("if-none-match");
  forwarded.headers.set(EDGE_REQUEST_HEADER, "1");
  return forwarded;
}

/** The placed Worker's answer without the edge's headers. */
function clientResponse(response: Response): Response {
  if (!response.headers.has(EDGE_CREDENTIAL_HEADER) && !response.headers.has(EDGE_EXPIRES_HEADER)) return response;
  const cleaned = new Response(response.body, response);
  cleaned.headers.delete(EDGE_CREDENTIAL_HEADER);
  cleaned.headers.delete(EDGE_EXPIRES_HEADER);
  return cleaned;
}

/** A stored answer served for this request: its own Request-Id and RateLimit headers; 304 when If-None-Match names its ETag. */
function servedAnswer(request: Request, answer: StoredAnswer, admission: (KeyAdmission & { status: "admitted" }) | null): Response {
  const headers = new Headers(answer.headers);
  headers.set("Request-Id", crypto.randomUUID());
  if (admission) for (const [name, value] of Object.entries(rateLimitHeaders(admission.decision))) headers.set(name, value);
  const etag = headers.get("etag");
  if (etag && ifNoneMatchNames(request.headers.get("if-none-match") ?? undefined, etag)) {
    headers.delete("content-type");
    headers.delete("content-encoding");
    return new Response(null, { status: 304, headers });
  }
  return new Response(request.method === "HEAD" ? null : answer.body, { status: answer.status, headers });
}

/** A miss asked unconditionally (originRequest): its 200 becomes the client's 304 when If-None-Match names its tag. */
function withCondition(request: Request, response: Response): Response {
  const etag = response.headers.get("etag");
  const condition = request.headers.get("if-none-match");
  if (response.status !== 200 || !etag || condition === null || !ifNoneMatchNames(condition, etag)) return response;
  const headers = new Headers(response.headers);
  for (const name of ["content-type", "content-length", "content-encoding"]) headers.delete(name);
  return new Response(null, { status: 304, headers });
}

type Miss = { hash: string; key: string; known?: KnownCredential; ticket: number | null };

async function storableAnswer(response: Response): Promise<{ answer: StoredAnswer; expiresAtMs: number | null } | null> {
  if (response.status !== 200) return null;
  const expires = response.headers.get(EDGE_EXPIRES_HEADER);
  const expiresAtMs = expires ? Number(expires) : null;
  if (expiresAtMs !== null && !Number.isSafeInteger(expiresAtMs)) return null;
  const headers = [...response.headers].filter(
    ([name]) => !PER_REQUEST_HEADERS.includes(name.toLowerCase()) && !name.toLowerCase().startsWith("x-edge-"),
  );
  return { answer: { status: 200, headers, body: await response.text() }, expiresAtMs };
}

export function createEdgeHandler(): ExportedHandler<EdgeEnv> {
  const credentials = new CredentialMap();
  /** The OpenAPI documents read so far, by path. */
  const documents = new Map<string, StoredAnswer>();

  /** A document from this isolate's memory, else read (unconditionally) and kept. */
  async function serveDocument(request: Request, env: EdgeEnv, path: string): Promise<Response> {
    const kept = documents.get(path);
    if (kept) return servedAnswer(request, kept, null);
    const response = await env.ORIGIN.fetch(originRequest(request, true));
    const storable = await storableAnswer(response.clone());
    if (storable && storable.expiresAtMs === null) documents.set(path, storable.answer);
    return withCondition(request, clientResponse(response));
  }

  /** Forwards; learns the credential from the answer; stores a 200 when the lookup gave a ticket for the same organization. */
  async function forward(request: Request, env: EdgeEnv, ctx: ExecutionContext, miss?: Miss): Promise<Response> {
    // A HEAD's answer has no body to store.
    const storing = request.method === "GET" && miss?.ticket !== null && miss?.ticket !== undefined;
    const response = await env.ORIGIN.fetch(originRequest(request, storing));
    if (!miss) return clientResponse(response);
    const credential = parseCredential(response.headers.get(EDGE_CREDENTIAL_HEADER));
    if (!credential) {
      if (response.status === 401) credentials.delete(miss.hash);
      return clientResponse(response);
    }
    credentials.set(miss.hash, credential);
    if (!storing || miss.known?.organizationId !== credential.organizationId) return clientResponse(response);
    // Stored after the answer is sent: the ticket refuses it if a write came in between, whenever it arrives.
    const copy = response.clone();
    const object = env.EDGE_CACHE.getByName(cacheObjectName(credential.organizationId));
    const store = async () => {
      const storable = await storableAnswer(copy);
      if (storable) await object.store(miss.key, miss.ticket!, storable.answer, storable.expiresAtMs);
    };
    ctx.waitUntil(store().catch(() => undefined));
    return withCondition(request, clientResponse(response));
  }

  return {
    async fetch(request, env, ctx): Promise<Response> {
      const url = new URL(request.url);
      const reads = request.method === "GET" || request.method === "HEAD";
      if (reads && url.search === "" && DOCUMENT_PATHS.has(url.pathname)) return serveDocument(request, env, url.pathname);
      if (!reads || !CACHED_PATHS.has(url.pathname)) return forward(request, env, ctx);
      const token = BEARER.exec(request.headers.get("authorization") ?? "")?.[1];
      if (!token) return forward(request, env, ctx);
      const hash = hashToken(token);
      const key = [
        hash,
        request.method === "HEAD" ? "GET" : request.method,
        url.pathname + url.search,
        request.headers.get("accept") ?? "",
      ].join("\u0000");
      const known = credentials.get(hash);
      if (!known) return forward(request, env, ctx, { hash, key, ticket: null });
      const object = env.EDGE_CACHE.getByName(cacheObjectName(known.organizationId));
      const credential = { counter: known.counter, counterId: known.counterId };
      const found = await object.lookupAdmitted(key, credential).catch(() => ({ answer: null, ticket: null, admission: null }));
      if (!found.answer) return forward(request, env, ctx, { hash, key, known, ticket: found.ticket });
      const admission = found.admission as KeyAdmission | null;
      // Revoked, refused or unknown to its counter: the placed Worker answers (401, 429), as it would have.
      if (admission?.status !== "admitted" || !admission.decision.allowed) return forward(request, env, ctx);
      return servedAnswer(request, found.answer as StoredAnswer, admission);
    },
  };
}

export default createEdgeHandler();
