/**
 * Unit tests of the token format (src/lib/keys.ts): `<cta|ctu>_<43 base62 random><6 base62 CRC-32>`.
 * The checksum is recomputed here independently so the format itself is pinned, not just
 * the round trip through the module's own helpers.
 */
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { TOKEN_KINDS, type TokenKind, crc32, displayPrefix, generateToken, hashToken, isWellFormedToken } from "../../src/lib/keys";

const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const KINDS: [TokenKind, string][] = [
  ["apiKey", "cta_"],
  ["uploadToken", "ctu_"],
];
const TOKEN_LENGTH = 4 + 43 + 6;

/** Independent base62 encoding of a 32-bit value on exactly 6 characters, most significant first. */
function checksumOf(body: string): string {
  let value = crc32(body);
  let out = "";
  for (let i = 0; i < 6; i++) {
    out = ALPHABET[value % 62] + out;
    value = Math.floor(value / 62);
  }
  return out;
}

function withChecksum(body: string): string {
  return body + checksumOf(body);
}

function randomBase62(length: number): string {
  let out = "";
  for (let i = 0; i < length; i++) out += ALPHABET[Math.floor(Math.random() * 62)];
  return out;
}

describe("crc32", () => {
  it.each([
    ["123456789", 0xcbf43926],
    ["", 0x00000000],
    ["a", 0xe8b7be43],
    ["abc", 0x352441c2],
    ["message digest", 0x20159d7f],
    ["The quick brown fox jumps over the lazy dog", 0x414fa339],
  ])("crc32(%j) is the standard CRC-32 (IEEE 802.3) value", (input, expected) => {
    expect(crc32(input)).toBe(expected);
  });

  it("returns an unsigned 32-bit integer", () => {
    for (let i = 0; i < 200; i++) {
      const value = crc32(randomBase62(40));
      expect(Number.isInteger(value)).toBe(true);
      expect(value).toBeGreaterThanOrEqual(0);
      expect(value).toBeLessThanOrEqual(0xffffffff);
    }
  });
});

describe("generateToken", () => {
  it.each(KINDS)("%s tokens are `%s` + 43 base62 random characters + 6 base62 checksum characters", (kind, prefix) => {
    expect(TOKEN_KINDS[kind]).toBe(prefix.slice(0, 3));
    for (let i = 0; i < 500; i++) {
      const token = generateToken(kind);
      expect(token).toHaveLength(TOKEN_LENGTH);
      expect(token).toMatch(new RegExp(`^${prefix}[0-9A-Za-z]{43}[0-9A-Za-z]{6}$`));
      const body = token.slice(0, -6);
      expect(token.slice(-6)).toBe(checksumOf(body));
    }
  });

  it("never repeats a token (1000 of each kind)", () => {
    for (const [kind] of KINDS) {
      const tokens = new Set(Array.from({ length: 1000 }, () => generateToken(kind)));
      expect(tokens.size).toBe(1000);
      const randomParts = new Set([...tokens].map((t) => t.slice(4, 47)));
      expect(randomParts.size).toBe(1000);
    }
  });

  it("draws the random part uniformly from all 62 characters (no modulo bias)", () => {
    const counts = new Map<string, number>();
    const tokens = 3000;
    for (let i = 0; i < tokens; i++) {
      for (const ch of generateToken("apiKey").slice(4, 47)) counts.set(ch, (counts.get(ch) ?? 0) + 1);
    }
    expect(counts.size).toBe(62);
    const expected = (tokens * 43) / 62; // ≈ 2080, standard deviation ≈ 45
    for (const ch of ALPHABET) {
      // A modulo bias on bytes (256 % 62 = 8) would over-weight 0-7 by 25 %; ±10 % is > 4 sigma.
      expect(counts.get(ch), `count of ${ch}`).toBeGreaterThan(expected * 0.9);
      expect(counts.get(ch), `count of ${ch}`).toBeLessThan(expected * 1.1);
    }
  });
});

describe("isWellFormedToken", () => {
  it.each(KINDS)("accepts every generated %s token", (kind) => {
    for (let i = 0; i < 500; i++) expect(isWellFormedToken(kind, generateToken(kind))).toBe(true);
  });

  it("accepts a hand-built token with a correct checksum", () => {
    const token = withChecksum(`cta_${"A".repeat(43)}`);
    expect(isWellFormedToken("apiKey", token)).toBe(true);
    expect(isWellFormedToken("uploadToken", withChecksum(`ctu_${"z".repeat(43)}`))).toBe(true);
  });

  it.each(KINDS)("rejects every single-character change of a %s token, at every position", (kind) => {
    const replacements = [...ALPHABET, "_", "-", " ", ".", "+", "/", "=", "\0", "é", "\u00ff"];
    for (let n = 0; n < 4; n++) {
      const token = generateToken(kind);
      const accepted: string[] = [];
      let tried = 0;
      for (let i = 0; i < token.length; i++) {
        for (const ch of replacements) {
          if (ch === token[i]) continue;
          const changed = token.slice(0, i) + ch + token.slice(i + 1);
          tried++;
          if (isWellFormedToken(kind, changed)) accepted.push(changed);
        }
      }
      expect(tried).toBeGreaterThan(TOKEN_LENGTH * 62);
      expect(accepted).toEqual([]);
    }
  });

  it("rejects a token of the other kind", () => {
    for (let i = 0; i < 50; i++) {
      expect(isWellFormedToken("apiKey", generateToken("uploadToken"))).toBe(false);
      expect(isWellFormedToken("uploadToken", generateToken("apiKey"))).toBe(false);
    }
  });

  it("rejects a wrong prefix even when the checksum is recomputed for it", () => {
    const random = randomBase62(43);
    for (const prefix of ["ctx_", "CTA_", "cta-", "ctu_", "cta", "xcta_", "_cta_", "tok_", "sk_"]) {
      const forged = withChecksum(`${prefix}${random}`.slice(0, 47).padEnd(47, "A"));
      expect(isWellFormedToken("apiKey", forged), forged).toBe(false);
    }
    // Same random part under the right prefix is fine: only the prefix made the difference above.
    expect(isWellFormedToken("apiKey", withChecksum(`cta_${random}`))).toBe(true);
  });

  it("rejects wrong lengths, even with a checksum that matches the shorter or longer body", () => {
    const token = generateToken("apiKey");
    const cases = [
      "",
      "cta_",
      "cta",
      token.slice(0, -1),
      token.slice(1),
      `${token}A`,
      `${token}${token}`,
      token.slice(0, -6),
      withChecksum(`cta_${randomBase62(42)}`),
      withChecksum(`cta_${randomBase62(44)}`),
      withChecksum(`cta_${randomBase62(20)}`),
      withChecksum(`cta_${randomBase62(100)}`),
      ` ${token}`,
      `${token} `,
      `${token}\n`,
    ];
    for (const candidate of cases) expect(isWellFormedToken("apiKey", candidate), JSON.stringify(candidate)).toBe(false);
  });

  it("rejects characters outside base62 even when the checksum matches", () => {
    for (const bad of ["-", "_", "+", "/", "=", " ", ".", "é"]) {
      const forged = withChecksum(`cta_${randomBase62(21)}${bad}${randomBase62(21)}`);
      expect(forged).toHaveLength(TOKEN_LENGTH);
      expect(isWellFormedToken("apiKey", forged), forged).toBe(false);
    }
  });
});

describe("hashToken and displayPrefix", () => {
  it("hashToken is the lowercase hex SHA-256 of the token", async () => {
    expect(await hashToken("abc")).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const token = generateToken("apiKey");
    expect(await hashToken(token)).toBe(createHash("sha256").update(token).digest("hex"));
  });

  it("displayPrefix shows only the kind and the first four random characters", () => {
    const token = generateToken("apiKey");
    expect(displayPrefix(token)).toBe(token.slice(0, 8));
    expect(displayPrefix(token).startsWith("cta_")).toBe(true);
  });
});
