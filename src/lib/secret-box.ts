/**
 * Encryption at rest of secrets the service must be able to read back (webhook signing secrets:
 * every delivery is signed with one), with keys that can rotate. docs/secrets.md describes the
 * configuration and the rotation procedure.
 *
 * - Keys come from server secrets (`SECRETS_KEY`, and `SECRETS_KEY_PREVIOUS` for older ones,
 *   accepted for decryption only). Each is stretched with HKDF-SHA-256 into an AES-256-GCM key and
 *   a key id (a 48-bit fingerprint: it names the key without revealing anything of it).
 * - A sealed secret is `v1:<key id>:<iv>:<ciphertext>` (iv and ciphertext with its tag in
 *   base64url): the key id says which key opens it, so rows sealed under an older key stay
 *   readable while they are re-encrypted under the current one.
 * - The associated data binds a ciphertext to its version, its key id and its place (`context`,
 *   e.g. the row and column), so it cannot be moved to another row and still open.
 *
 * Only WebCrypto (`crypto.subtle`, in Node 20+ and in Workers): no cryptography by hand. Keys
 * are derived on first use and kept for the keyring's life. Messages of errors never include a
 * secret or a key.
 */
import { base64UrlDecode, base64UrlEncode, utf8 } from "./crypto";

/** Characters a key must have at least (`openssl rand -base64 32` gives 44). */
export const MIN_SECRETS_KEY_LENGTH = 32;

const VERSION = "v1";
const KEY_ID_HEX = 12;
const IV_BYTES = 12;
const HKDF_SALT = utf8("ci-test-analytics/secret-box");
const SEALED = /^v1:([0-9a-f]{12}):([A-Za-z0-9_-]{16}):([A-Za-z0-9_-]{22,})$/;

/** A sealed secret could not be opened: unknown key id, wrong key, altered, or not a sealed secret at all. */
export class SecretDecryptionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SecretDecryptionError";
  }
}

/** The key id of a sealed secret, or null if it is not one. */
export function sealedKeyId(sealed: string): string | null {
  return SEALED.exec(sealed)?.[1] ?? null;
}

/** `SECRETS_KEY_PREVIOUS`: keys separated by commas (or white space); empty entries are ignored. */
export function parseKeyList(text: string | undefined): string[] {
  return (text ?? "").split(/[\s,]+/).filter((key) => key !== "");
}

/** A new random key, for a key file or a throwaway database (256 bits, base64url). */
export function generateSecretsKey(): string {
  return base64UrlEncode(crypto.getRandomValues(new Uint8Array(32)));
}

type CryptoKeyOf = Awaited<ReturnType<typeof crypto.subtle.deriveKey>>;
type DerivedKey = { id: string; key: CryptoKeyOf; material: CryptoKeyOf };

const hkdf = (info: string) => ({ name: "HKDF", hash: "SHA-256", salt: HKDF_SALT, info: utf8(info) });

async function deriveKey(secret: string): Promise<DerivedKey> {
  const material = await crypto.subtle.importKey("raw", utf8(secret), "HKDF", false, ["deriveKey", "deriveBits"]);
  const key = await crypto.subtle.deriveKey(hkdf("aes-256-gcm key v1"), material, { name: "AES-GCM", length: 256 }, false, [
    "encrypt",
    "decrypt",
  ]);
  const idBits = new Uint8Array(await crypto.subtle.deriveBits(hkdf("key id v1"), material, (KEY_ID_HEX / 2) * 8));
  return { id: Array.from(idBits, (byte) => byte.toString(16).padStart(2, "0")).join(""), key, material };
}

const additionalData = (keyId: string, context: string) => utf8(`${VERSION}:${keyId}:${context}`);

export class SecretKeyring {
  readonly #current: Promise<DerivedKey>;
  readonly #all: Promise<DerivedKey[]>;
  /** Derived secrets by purpose, computed once per keyring. */
  readonly #derived = new Map<string, Promise<string>>();

  /** `current` seals and opens; each of `previous` only opens. Throws if a key is shorter than MIN_SECRETS_KEY_LENGTH. */
  constructor(keys: { current: string; previous?: readonly string[] }) {
    for (const [name, key] of [
      ["SECRETS_KEY", keys.current],
      ...(keys.previous ?? []).map((key) => ["SECRETS_KEY_PREVIOUS", key] as const),
    ] as const) {
      if (key.length < MIN_SECRETS_KEY_LENGTH)
        throw new Error(`${name}: every key must be at least ${MIN_SECRETS_KEY_LENGTH} characters long.`);
    }
    this.#current = deriveKey(keys.current);
    const previous = [...new Set(keys.previous ?? [])].filter((key) => key !== keys.current);
    this.#all = Promise.all([this.#current, ...previous.map(deriveKey)]);
    // Derivation failures surface from the calls that need the keys; none may go unobserved before.
    this.#all.catch(() => {});
  }

  /** The id of the key that seals (`SECRETS_KEY`'s). */
  async currentKeyId(): Promise<string> {
    return (await this.#current).id;
  }

  /**
   * A secret for another component, derived from the current key with HKDF-SHA-256 (info
   * `derived secret v1: <purpose>`): 256 bits, base64url. Each purpose gets its own value, and
   * none reveals the key or the others, so a component needs no secret of its own (better-auth's
   * signing secret is `deriveSecret("better-auth")`, docs/web-app.md). It changes with SECRETS_KEY.
   */
  deriveSecret(purpose: string): Promise<string> {
    let secret = this.#derived.get(purpose);
    if (!secret) {
      secret = this.#current.then(async ({ material }) =>
        base64UrlEncode(new Uint8Array(await crypto.subtle.deriveBits(hkdf(`derived secret v1: ${purpose}`), material, 256))),
      );
      this.#derived.set(purpose, secret);
    }
    return secret;
  }

  /** Seals `plaintext` under the current key, bound to `context` (where it is stored). */
  async encrypt(plaintext: string, context: string): Promise<string> {
    const { id, key } = await this.#current;
    const iv = crypto.getRandomValues(new Uint8Array(IV_BYTES));
    const ciphertext = await crypto.subtle.encrypt(
      { name: "AES-GCM", iv, additionalData: additionalData(id, context) },
      key,
      utf8(plaintext),
    );
    return `${VERSION}:${id}:${base64UrlEncode(iv)}:${base64UrlEncode(new Uint8Array(ciphertext))}`;
  }

  /** Opens a sealed secret with the key its id names (current or previous), for the same `context`. */
  async decrypt(sealed: string, context: string): Promise<string> {
    const match = SEALED.exec(sealed);
    const iv = match ? base64UrlDecode(match[2]!) : null;
    const ciphertext = match ? base64UrlDecode(match[3]!) : null;
    if (!match || !iv || !ciphertext) throw new SecretDecryptionError("The stored value is not a sealed secret.");
    const keyId = match[1]!;
    const entry = (await this.#all).find((candidate) => candidate.id === keyId);
    if (!entry)
      throw new SecretDecryptionError(
        `The secret is sealed under key ${keyId}, which is neither SECRETS_KEY nor one of SECRETS_KEY_PREVIOUS.`,
      );
    let plaintext: ArrayBuffer;
    try {
      plaintext = await crypto.subtle.decrypt(
        { name: "AES-GCM", iv, additionalData: additionalData(keyId, context) },
        entry.key,
        ciphertext,
      );
    } catch {
      throw new SecretDecryptionError(`The secret sealed under key ${keyId} does not open: it was altered or moved from another row.`);
    }
    return new TextDecoder().decode(plaintext);
  }
}
