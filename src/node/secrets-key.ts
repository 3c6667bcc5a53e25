/**
 * Where the Node entries (`npm start`, `npm run dev`) get the key that seals webhook signing
 * secrets (docs/secrets.md), so that they work out of the box without SECRETS_KEY:
 * - SECRETS_KEY set: that key, with SECRETS_KEY_PREVIOUS (production; any database shared by
 *   several processes).
 * - `memory://`: a random key for this process; the database is thrown away with it.
 * - otherwise: the key kept in `./.data/secrets-key`, generated on the first start (readable by
 *   its owner only). It sits next to the embedded database (`./.data/pglite`), never inside it, so
 *   a dump of the database does not carry the key that opens its secrets. Losing the file loses
 *   the webhooks' secrets (they can be re-created); copying the database elsewhere needs it too.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { MIN_SECRETS_KEY_LENGTH, SecretKeyring, generateSecretsKey } from "../lib/secret-box";
import type { NodeConfig } from "./config";
import { isPostgresUrl } from "./database";

const DEFAULT_SECRETS_KEY_FILE = "./.data/secrets-key";

export type SecretsKeySource = { kind: "environment" } | { kind: "memory" } | { kind: "file"; path: string; created: boolean };

function readKeyFile(path: string): string {
  const key = readFileSync(path, "utf8").trim();
  if (key.length < MIN_SECRETS_KEY_LENGTH)
    throw new Error(
      `${path} does not hold a key of at least ${MIN_SECRETS_KEY_LENGTH} characters; restore it, or set SECRETS_KEY (docs/secrets.md).`,
    );
  return key;
}

/** The key in `path`, created (owner-only) if there is none yet. */
function keyFromFile(path: string): { key: string; created: boolean } {
  try {
    return { key: readKeyFile(path), created: false };
  } catch (error) {
    if ((error as { code?: string }).code !== "ENOENT") throw error;
  }
  mkdirSync(dirname(path), { recursive: true });
  const key = generateSecretsKey();
  try {
    // `wx`: two first starts at once must not each write their own key; the second reads the first's.
    writeFileSync(path, `${key}\n`, { mode: 0o600, flag: "wx" });
    return { key, created: true };
  } catch (error) {
    if ((error as { code?: string }).code !== "EEXIST") throw error;
    return { key: readKeyFile(path), created: false };
  }
}

export function openSecretsKeyring(
  config: Pick<NodeConfig, "secretsKey" | "secretsKeyPrevious" | "databaseUrl">,
  options: { keyFile?: string } = {},
): { secrets: SecretKeyring; source: SecretsKeySource; keys: { current: string; previous: string[] } } {
  const previous = config.secretsKeyPrevious;
  if (config.secretsKey)
    return {
      secrets: new SecretKeyring({ current: config.secretsKey, previous }),
      source: { kind: "environment" },
      keys: { current: config.secretsKey, previous },
    };
  if (config.databaseUrl === "memory://") {
    const current = generateSecretsKey();
    return { secrets: new SecretKeyring({ current, previous }), source: { kind: "memory" }, keys: { current, previous } };
  }
  const path = options.keyFile ?? DEFAULT_SECRETS_KEY_FILE;
  const { key, created } = keyFromFile(path);
  return {
    secrets: new SecretKeyring({ current: key, previous }),
    source: { kind: "file", path, created },
    keys: { current: key, previous },
  };
}

/** What the start banner says about the key when it is not configured; null when SECRETS_KEY is set. */
export function secretsKeyNotice(source: SecretsKeySource, databaseUrl: string | undefined): string | null {
  if (source.kind === "environment") return null;
  if (source.kind === "memory")
    return "SECRETS_KEY is not set: webhook signing secrets are sealed with a key of this process (the in-memory database goes with it).";
  const where = `${source.created ? "a new key, written to" : "the key in"} ${source.path}`;
  const notice = `SECRETS_KEY is not set: webhook signing secrets are sealed with ${where}. Keep that file with the database: without it they cannot be opened.`;
  if (databaseUrl && isPostgresUrl(databaseUrl)) {
    return `WARNING: ${notice} A database on a server should have SECRETS_KEY set, the same for every process that uses it (docs/secrets.md).`;
  }
  return notice;
}
