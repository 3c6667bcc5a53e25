/**
 * Which characters, and pairs of adjacent characters, a name has: a text with one the name lacks
 * is not in the name, known without searching it (src/lib/codeowners.ts).
 *
 * A file's name is searched for the literal text of every rule that may match it (a glob's longest
 * run, a rule's needed text its directory lacks): against the hostile 3 MiB file, a hundred
 * searches per file, nearly all of which fail. The name's characters and pairs are set as bits
 * once (a pair's bit is shared by several pairs); a text's bits are worked out once per rule. A
 * text whose bits are all set may be in the name and is searched as before, so the answer is the
 * search's: the bits only spare most of the searches.
 */

/** 128 bits for single characters (their code's low 7 bits), 256 for pairs (hashed). */
const WORDS = 12;
const single = (code: number) => code & 127;
const pair = (first: number, second: number) => 128 + ((first * 37 + second) & 255);
/** Pairs of a text kept: a few rule most names out, and a text may be long. */
const PAIRS_KEPT = 6;

/** The bits a text needs a name to have: its first pairs, or its one character. */
export function gramsOf(text: string): Int32Array {
  if (text.length <= 1) return text.length === 0 ? new Int32Array(0) : Int32Array.of(single(text.charCodeAt(0)));
  const grams = new Int32Array(Math.min(text.length - 1, PAIRS_KEPT));
  for (let i = 0; i < grams.length; i++) grams[i] = pair(text.charCodeAt(i), text.charCodeAt(i + 1));
  return grams;
}

/** One name's bits, filled again for each name (one instance per matcher: no allocation per name). */
export class NameGrams {
  private readonly bits = new Int32Array(WORDS);

  fill(name: string): void {
    const bits = this.bits;
    bits.fill(0);
    let previous = -1;
    for (let i = 0; i < name.length; i++) {
      const code = name.charCodeAt(i);
      const one = single(code);
      bits[one >> 5]! |= 1 << (one & 31);
      if (previous !== -1) {
        const two = pair(previous, code);
        bits[two >> 5]! |= 1 << (two & 31);
      }
      previous = code;
    }
  }

  /** False when the text of `grams` (gramsOf) is surely not in the name; true when it may be. */
  mayHave(grams: Int32Array): boolean {
    const bits = this.bits;
    for (let k = 0; k < grams.length; k++) {
      const bit = grams[k]!;
      if ((bits[bit >> 5]! & (1 << (bit & 31))) === 0) return false;
    }
    return true;
  }
}
