/**
 * The secret box (src/lib/secret-box.ts): sealed secrets open again with the key that sealed
 * them, also once it became a previous key; a key that is not configured, an altered ciphertext
 * or one moved to another row fail with SecretDecryptionError, whose message names no secret.
 */
import { describe, expect, it } from "vitest";
import { SecretDecryptionError, SecretKeyring, generateSecretsKey, parseKeyList, sealedKeyId } from "../../src/lib/secret-box";

const KEY_A = "key-a-0123456789abcdefghijklmnopqrstuvwxyz";
const KEY_B = "key-b-0123456789abcdefghijklmnopqrstuvwxyz";
const SECRET = "whsec_00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
const CONTEXT = "webhook_endpoints/0b7e3f8e-4a46-4a7e-9d0e-2b1c3d4e5f60/signing_secret";

describe("sealing and opening", () => {
  it("round-trips, in the stored form v1:<key id>:<iv>:<ciphertext>, never containing the secret", async () => {
    const keyring = new SecretKeyring({ current: KEY_A });
    const sealed = await keyring.encrypt(SECRET, CONTEXT);
    expect(sealed).toMatch(/^v1:[0-9a-f]{12}:[A-Za-z0-9_-]{16}:[A-Za-z0-9_-]+$/);
    expect(sealedKeyId(sealed)).toBe(await keyring.currentKeyId());
    expect(sealed).not.toContain(SECRET.slice(6, 20));
    expect(await keyring.decrypt(sealed, CONTEXT)).toBe(SECRET);
  });

  it("seals the same secret differently each time (a fresh iv), and both open", async () => {
    const keyring = new SecretKeyring({ current: KEY_A });
    const [one, two] = [await keyring.encrypt(SECRET, CONTEXT), await keyring.encrypt(SECRET, CONTEXT)];
    expect(one).not.toBe(two);
    expect(await keyring.decrypt(two, CONTEXT)).toBe(SECRET);
  });

  it("the key id depends on the key only: the same key in another keyring has the same id, another key another id", async () => {
    expect(await new SecretKeyring({ current: KEY_A }).currentKeyId()).toBe(
      await new SecretKeyring({ current: KEY_A, previous: [KEY_B] }).currentKeyId(),
    );
    expect(await new SecretKeyring({ current: KEY_A }).currentKeyId()).not.toBe(await new SecretKeyring({ current: KEY_B }).currentKeyId());
  });
});

describe("rotation", () => {
  it("a secret sealed under the old key opens while it is a previous key, and is re-sealed under the new one", async () => {
    const sealedUnderA = await new SecretKeyring({ current: KEY_A }).encrypt(SECRET, CONTEXT);
    const rotated = new SecretKeyring({ current: KEY_B, previous: [KEY_A] });
    expect(await rotated.decrypt(sealedUnderA, CONTEXT)).toBe(SECRET);

    const resealed = await rotated.encrypt(await rotated.decrypt(sealedUnderA, CONTEXT), CONTEXT);
    expect(sealedKeyId(resealed)).toBe(await rotated.currentKeyId());
    expect(sealedKeyId(resealed)).not.toBe(sealedKeyId(sealedUnderA));
    // Once every row is re-sealed, the old key can go.
    expect(await new SecretKeyring({ current: KEY_B }).decrypt(resealed, CONTEXT)).toBe(SECRET);
  });
});

describe("failing cleanly", () => {
  /** The error a decryption fails with; it must be a SecretDecryptionError that names no secret and no key. */
  async function failure(keyring: SecretKeyring, sealed: string, context = CONTEXT): Promise<SecretDecryptionError> {
    const error = await keyring.decrypt(sealed, context).then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(SecretDecryptionError);
    const message = (error as Error).message;
    for (const leaked of [SECRET, SECRET.slice(6), KEY_A, KEY_B]) expect(message).not.toContain(leaked);
    return error as SecretDecryptionError;
  }

  it("a key that is not configured (the wrong key) does not open it, and the error names the key id it needs", async () => {
    const sealed = await new SecretKeyring({ current: KEY_A }).encrypt(SECRET, CONTEXT);
    const error = await failure(new SecretKeyring({ current: KEY_B }), sealed);
    expect(error.message).toContain(sealedKeyId(sealed)!);
    expect(error.message).toMatch(/neither SECRETS_KEY nor one of SECRETS_KEY_PREVIOUS/);
  });

  it("an altered ciphertext, a ciphertext moved to another row, or a value that is not sealed do not open", async () => {
    const keyring = new SecretKeyring({ current: KEY_A });
    const sealed = await keyring.encrypt(SECRET, CONTEXT);
    const last = sealed.at(-2) === "A" ? "B" : "A";
    await failure(keyring, `${sealed.slice(0, -2)}${last}${sealed.at(-1)}`);
    await failure(keyring, sealed, CONTEXT.replace("0b7e3f8e", "1c8f4a9f"));
    await failure(keyring, SECRET);
    await failure(keyring, "v1:zz:not:sealed");
  });

  it("refuses keys shorter than 32 characters", () => {
    expect(() => new SecretKeyring({ current: "short" })).toThrow(/SECRETS_KEY: every key must be at least 32 characters/);
    expect(() => new SecretKeyring({ current: KEY_A, previous: ["short"] })).toThrow(/SECRETS_KEY_PREVIOUS/);
  });
});

describe("configuration helpers", () => {
  it("SECRETS_KEY_PREVIOUS lists keys separated by commas or white space", () => {
    expect(parseKeyList(` ${KEY_A}, ${KEY_B},,`)).toEqual([KEY_A, KEY_B]);
    expect(parseKeyList(undefined)).toEqual([]);
  });

  it("generated keys are 256-bit base64url and usable", async () => {
    const key = generateSecretsKey();
    expect(key).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(
      await new SecretKeyring({ current: key }).decrypt(await new SecretKeyring({ current: key }).encrypt("x", CONTEXT), CONTEXT),
    ).toBe("x");
  });
});
