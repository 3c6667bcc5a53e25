/**
 * The placed Worker's side of the edge cache (docs/edge-path.md, "Edge-cached reads"): for one
 * request, queue batch or cron run, the bypasses it opened on the organizations' cache objects
 * (src/worker/edge-cache-object.ts) before writing, released once its writes are committed, and
 * the credential a request was admitted with, which the edge Worker learns from the answer.
 */
import type { EdgeCacheHooks, EdgeCredential } from "../app-env";
import { ApiError } from "../lib/errors";
import type { Logger } from "../lib/logger";
import type { EdgeCacheObject } from "./edge-cache-object";

/** The answer's header that tells the edge Worker the credential (never reaches a client: the edge removes it). */
export const EDGE_CREDENTIAL_HEADER = "x-edge-credential";
/** The request's header by which the edge Worker asks for it. */
export const EDGE_REQUEST_HEADER = "x-edge-request";
/** The answer's header that gives the earliest moment a cached answer must no longer be served (ms since the epoch). */
export const EDGE_EXPIRES_HEADER = "x-edge-expires";

/** The cache object of an organization. */
export const cacheObjectName = (organizationId: string) => `org:${organizationId}`;

export class EdgeCacheBracket implements EdgeCacheHooks {
  readonly #opened = new Map<string, Promise<string>>();
  credential: EdgeCredential | null = null;
  /** The earliest moment the answer stops being true by itself (a quarantine's end), when it has one. */
  expiresAtMs: number | null = null;

  constructor(
    private readonly namespace: DurableObjectNamespace<EdgeCacheObject> | undefined,
    readonly writes: boolean,
    private readonly logger: Logger,
  ) {}

  admitted(credential: EdgeCredential): void {
    this.credential = credential;
  }

  expires(atMs: number): void {
    this.expiresAtMs = this.expiresAtMs === null ? atMs : Math.min(this.expiresAtMs, atMs);
  }

  /** Opens the organization's bypass once per holder; 503 when its object cannot be reached (nothing is written then). */
  async beforeWrite(organizationId: string): Promise<void> {
    if (!this.namespace) return;
    let opening = this.#opened.get(organizationId);
    if (!opening) {
      opening = this.namespace.getByName(cacheObjectName(organizationId)).bypass();
      this.#opened.set(organizationId, opening);
    }
    try {
      await opening;
    } catch (error) {
      throw Object.assign(
        new ApiError("service_unavailable", "The edge cache could not be told of this write; nothing was written. Retry shortly.", {
          headers: { "Retry-After": "1" },
        }),
        { cause: error },
      );
    }
  }

  /**
   * Releases every bypass opened, after the holder's writes committed or failed. A release that
   * fails leaves its organization bypassed until the lease lapses: reads go to the database meanwhile.
   */
  async releaseAll(): Promise<void> {
    const opened = [...this.#opened];
    this.#opened.clear();
    await Promise.all(
      opened.map(async ([organizationId, opening]) => {
        try {
          const token = await opening;
          await this.namespace!.getByName(cacheObjectName(organizationId)).release(token);
        } catch (error) {
          this.logger.error("edge cache bypass not released; it lapses with its lease", {
            organizationId,
            error: error instanceof Error ? error.message : String(error),
          });
        }
      }),
    );
  }
}
