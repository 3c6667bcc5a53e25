/**
 * One-time messages of the pages (docs/web-app.md "Forms"): a POST that changed something answers
 * 303 to a GET page, and what it has to say there (a notice, an error, a secret shown once: a new
 * upload token, a regenerated API key) waits in `flash_messages`, bound to the person's session
 * and to that page, never in the URL. Reading it deletes it in the same statement (DELETE …
 * RETURNING), so a reload, a second tab or a replayed GET finds nothing; after FLASH_TTL_MS it is
 * worth nothing. The body is sealed under SECRETS_KEY for its row (context
 * `flash_messages/<session id>/<page>`) and never logged.
 */
import { and, eq, lte } from "drizzle-orm";
import { flashMessages } from "../../db/schema";
import { SecretDecryptionError, type SecretKeyring } from "../../lib/secret-box";
import type { ServiceDeps } from "./context";

/** How long a message waits for its page: the redirect is followed at once, so a few minutes is plenty. */
const FLASH_TTL_MS = 5 * 60_000;

type Deps = Pick<ServiceDeps, "db" | "clock"> & { secrets: SecretKeyring };

const context = (sessionId: string, page: string) => `flash_messages/${sessionId}/${page}`;

/** Leaves `body` (any JSON value) for the next GET of `page` in the session; replaces one left before and not read. */
export async function putFlash(deps: Deps, sessionId: string, page: string, body: unknown): Promise<void> {
  const now = deps.clock.now();
  const bodyEncrypted = await deps.secrets.encrypt(JSON.stringify(body), context(sessionId, page));
  const expiresAt = new Date(now.getTime() + FLASH_TTL_MS);
  // Messages never read (a redirect not followed) are deleted by the next one written, whoever's.
  await deps.db.delete(flashMessages).where(lte(flashMessages.expiresAt, now));
  await deps.db
    .insert(flashMessages)
    .values({ sessionId, page, bodyEncrypted, expiresAt })
    .onConflictDoUpdate({ target: [flashMessages.sessionId, flashMessages.page], set: { bodyEncrypted, expiresAt } });
}

/** The message left for `page` in the session, deleted as it is read; null if none, expired, or unreadable. */
export async function takeFlash<T>(deps: Deps, sessionId: string, page: string): Promise<T | null> {
  const [row] = await deps.db
    .delete(flashMessages)
    .where(and(eq(flashMessages.sessionId, sessionId), eq(flashMessages.page, page)))
    .returning({ bodyEncrypted: flashMessages.bodyEncrypted, expiresAt: flashMessages.expiresAt });
  if (!row || row.expiresAt.getTime() <= deps.clock.now().getTime()) return null;
  try {
    return JSON.parse(await deps.secrets.decrypt(row.bodyEncrypted, context(sessionId, page))) as T;
  } catch (error) {
    // Sealed under a key the server no longer has: as good as gone.
    if (error instanceof SecretDecryptionError) return null;
    throw error;
  }
}
