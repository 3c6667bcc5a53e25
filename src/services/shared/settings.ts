import { eq } from "drizzle-orm";
import { appSettings } from "../../db/schema";
import type { Database } from "../../db/types";

/**
 * Returns the stored setting, creating it with `create()` on first use. Concurrent first
 * starts agree on one value: the insert does nothing on conflict and everyone re-reads.
 */
export async function getOrCreateSetting(db: Database, key: string, create: () => string): Promise<string> {
  await db.insert(appSettings).values({ key, value: create() }).onConflictDoNothing();
  const [row] = await db.select().from(appSettings).where(eq(appSettings.key, key));
  return row!.value;
}

export function randomSecret(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}
