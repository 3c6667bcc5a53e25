/**
 * Where `npm start` and `npm run dev` get SECRETS_KEY (src/node/secrets-key.ts): the environment
 * when set; a key of the process for memory://; otherwise a key file next to the embedded
 * database, generated once (owner-only) and then reused, so the service works out of the box and
 * keeps opening its secrets across restarts. And the configuration's checks of the keys.
 */
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { readNodeConfig } from "../../src/node/config";
import { openSecretsKeyring, secretsKeyNotice } from "../../src/node/secrets-key";

const dir = mkdtempSync(join(tmpdir(), "cia-secrets-key-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const KEY = "configured-secrets-key-0123456789abcdefghij";
const OLD_KEY = "previous-secrets-key-0123456789abcdefghijkl";
const CONTEXT = "webhook_endpoints/x/signing_secret";

describe("the secrets key on Node", () => {
  it("SECRETS_KEY wins, with SECRETS_KEY_PREVIOUS for opening only; no file is written and nothing is announced", async () => {
    const keyFile = join(dir, "unused", "secrets-key");
    const config = readNodeConfig({ SECRETS_KEY: KEY, SECRETS_KEY_PREVIOUS: `${OLD_KEY}` });
    const { secrets, source } = openSecretsKeyring(config, { keyFile });
    expect(source).toEqual({ kind: "environment" });
    expect(() => statSync(keyFile)).toThrow();
    expect(secretsKeyNotice(source, undefined)).toBeNull();
    const sealedUnderOld = await openSecretsKeyring(readNodeConfig({ SECRETS_KEY: OLD_KEY }), { keyFile }).secrets.encrypt("s", CONTEXT);
    expect(await secrets.decrypt(sealedUnderOld, CONTEXT)).toBe("s");
  });

  it("without it, the embedded database's key file is created once (owner-only) and reused by the next start", async () => {
    const keyFile = join(dir, "data", "secrets-key");
    const first = openSecretsKeyring(readNodeConfig({}), { keyFile });
    expect(first.source).toEqual({ kind: "file", path: keyFile, created: true });
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);
    expect(secretsKeyNotice(first.source, undefined)).toMatch(
      /SECRETS_KEY is not set: .*a new key, written to .*secrets-key\. Keep that file with the database/,
    );

    const sealed = await first.secrets.encrypt("whsec_x", CONTEXT);
    const second = openSecretsKeyring(readNodeConfig({}), { keyFile });
    expect(second.source).toEqual({ kind: "file", path: keyFile, created: false });
    expect(await second.secrets.decrypt(sealed, CONTEXT)).toBe("whsec_x");
    // Nothing of the key in the notice.
    expect(secretsKeyNotice(second.source, undefined)).not.toContain(readFileSync(keyFile, "utf8").trim());
  });

  it("on a Postgres server without SECRETS_KEY the key file is used with a warning", () => {
    const keyFile = join(dir, "pg", "secrets-key");
    const { source } = openSecretsKeyring(readNodeConfig({ DATABASE_URL: "postgres://u@db.example:5432/x" }), { keyFile });
    expect(secretsKeyNotice(source, "postgres://u@db.example:5432/x")).toMatch(/^WARNING: .*should have SECRETS_KEY set/);
  });

  it("memory:// gets a key of the process, written nowhere", async () => {
    const keyFile = join(dir, "memory", "secrets-key");
    const a = openSecretsKeyring(readNodeConfig({ DATABASE_URL: "memory://" }), { keyFile });
    const b = openSecretsKeyring(readNodeConfig({ DATABASE_URL: "memory://" }), { keyFile });
    expect(a.source).toEqual({ kind: "memory" });
    expect(() => statSync(keyFile)).toThrow();
    expect(await a.secrets.currentKeyId()).not.toBe(await b.secrets.currentKeyId());
  });

  it("refuses short keys and a damaged key file, without printing them", () => {
    const failure = (attempt: () => unknown) => {
      try {
        attempt();
      } catch (error) {
        return (error as Error).message;
      }
      throw new Error("expected a failure");
    };
    const short = failure(() => readNodeConfig({ SECRETS_KEY: "too-short-key" }));
    expect(short).toMatch(/SECRETS_KEY must be at least 32 characters long/);
    expect(short).not.toContain("too-short-key");
    expect(failure(() => readNodeConfig({ SECRETS_KEY: KEY, SECRETS_KEY_PREVIOUS: `${OLD_KEY},too-short-key` }))).toMatch(
      /^Every key of SECRETS_KEY_PREVIOUS/,
    );
    const damaged = join(dir, "damaged-secrets-key");
    writeFileSync(damaged, "abc\n");
    expect(failure(() => openSecretsKeyring(readNodeConfig({}), { keyFile: damaged }))).toMatch(
      /does not hold a key of at least 32 characters/,
    );
  });
});
