import { consoleLogger } from "../lib/logger";
import { systemClock } from "../lib/clock";
import type { SecretKeyring } from "../lib/secret-box";
import type { Database } from "../db/types";
import { type DemoPerson, isDatabaseEmpty, seedDemoOrganization } from "./demo-seed";
import { getOrCreateSetting, randomSecret } from "../services/shared/settings";
import { reencryptSigningSecrets } from "../services/notifications/webhook-secrets";
import type { NodeConfig } from "./config";

/**
 * What `npm start` and `npm run dev` do to a migrated database before serving: settle the cursor
 * secret (configured, or generated once and kept in the database), seal webhook signing secrets
 * still in plain text or under an older key (src/services/notifications/webhook-secrets.ts) and, on an empty
 * database, create the demo organization (src/node/demo-seed.ts: simulated CI histories replayed
 * through the upload path), whose key and people's passwords are returned because they can be
 * shown only now.
 */
export async function prepareDatabase(
  db: Database,
  config: Pick<NodeConfig, "cursorSecret" | "seedDemo"> & { webAppUrl: string },
  secrets: SecretKeyring,
) {
  const cursorSecret = config.cursorSecret ?? (await getOrCreateSetting(db, "cursor_secret", randomSecret));
  await reencryptSigningSecrets({ db, secrets, logger: consoleLogger });
  const deps = { db, clock: systemClock, webAppUrl: config.webAppUrl };
  let demoKey: string | null = null;
  let demoPeople: DemoPerson[] = [];
  if (config.seedDemo && (await isDatabaseEmpty(deps))) {
    console.log("Creating the demo organization: replaying simulated CI runs of three projects through the upload API…");
    const demo = await seedDemoOrganization({ ...deps, secrets });
    demoKey = demo.apiKey;
    demoPeople = demo.people;
  }
  return { cursorSecret, demoKey, demoPeople };
}
