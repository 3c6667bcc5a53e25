/**
 * How deeply JSON text nests, read from the text itself, before anything parses it.
 *
 * JSON.parse copes with deep nesting, but what handles the parsed value next often recurses
 * (JSON.stringify, validators, presenters): a 9 KB body of 4,500 `[` overflows the stack there.
 * Counting `[` and `{` outside strings over the raw text is one pass with no allocation, so
 * excessive depth is refused before any of that runs. Malformed text is not judged here: the
 * parser that comes next reports it.
 */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;

/**
 * The deepest nesting of arrays and objects in `text` (a top-level object or array is 1), or
 * `limit + 1` as soon as the text goes deeper than `limit`. O(n) and stops early: brackets inside
 * strings do not count, and a backslash escapes the character after it (so `"\""` stays a string).
 */
export function jsonTextDepth(text: string, limit: number): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (inString) {
      if (code === BACKSLASH) i++;
      else if (code === QUOTE) inString = false;
    } else if (code === QUOTE) {
      inString = true;
    } else if (code === OPEN_BRACKET || code === OPEN_BRACE) {
      depth++;
      if (depth > deepest) {
        deepest = depth;
        if (deepest > limit) return deepest;
      }
    } else if ((code === CLOSE_BRACKET || code === CLOSE_BRACE) && depth > 0) {
      depth--;
    }
  }
  return deepest;
}

/**
 * jsonTextDepth over UTF-8 bytes, chunk by chunk: the characters it counts are ASCII, and no byte
 * of a multi-byte character is, so the bytes give what the text gives.
 */
export class JsonByteDepth {
  private depth = 0;
  private inString = false;
  private escaped = false;
  exceeded = false;

  constructor(private readonly limit: number) {}

  write(bytes: Uint8Array): void {
    if (this.exceeded) return;
    let { depth, inString, escaped } = this;
    for (let i = 0; i < bytes.length; i++) {
      const code = bytes[i]!;
      if (inString) {
        if (escaped) escaped = false;
        else if (code === BACKSLASH) escaped = true;
        else if (code === QUOTE) inString = false;
      } else if (code === QUOTE) {
        inString = true;
      } else if (code === OPEN_BRACKET || code === OPEN_BRACE) {
        if (++depth > this.limit) {
          this.exceeded = true;
          return;
        }
      } else if ((code === CLOSE_BRACKET || code === CLOSE_BRACE) && depth > 0) {
        depth--;
      }
    }
    Object.assign(this, { depth, inString, escaped });
  }
}
