/**
 * JSON read as a stream of UTF-8 bytes, for reports too large to hold whole (the Worker's JSON
 * uploads, src/ingest/json-upload-stream.ts). The tokenizer is @streamparser/json's (strings and
 * numbers exactly as JSON.parse reads them, escapes and lone surrogates included); it checks tokens,
 * not the grammar, so the grammar is checked here, as JSON.parse would: `[1 2]`, `{"a" "b"}`,
 * `[1,]` and anything after the document are syntax errors.
 *
 * What the tokens become is up to sinks, one per value position: a sink may build the value
 * (`buildInto`, as JSON.parse would), skip it without keeping anything (`SKIP`), or walk into an
 * object or array and hand each member to a sink of its own, so that a large array is read one
 * element at a time.
 */
import Tokenizer from "@streamparser/json/tokenizer.js";
import TokenType from "@streamparser/json/utils/types/tokenType.js";

export type JsonScalar = string | number | boolean | null;

/** The UTF-8 byte-order mark. */
const BOM = [0xef, 0xbb, 0xbf] as const;

/** What to do with one value. */
export interface ValueSink {
  /** An object begins here: its members go to the returned handler. */
  object(): ObjectSink;
  /** An array begins here: its elements go to the returned handler. */
  array(): ArraySink;
  /** A string, number, boolean or null here. */
  scalar(value: JsonScalar): void;
}
export interface ObjectSink {
  /** The sink of the member named `key` (a repeated key comes again: JSON.parse keeps the last). */
  member(key: string): ValueSink;
  end(): void;
}
export interface ArraySink {
  element(index: number): ValueSink;
  end(): void;
}

const SKIP_OBJECT: ObjectSink = { member: () => SKIP, end() {} };
const SKIP_ARRAY: ArraySink = { element: () => SKIP, end() {} };
/** Reads a value and keeps nothing of it. */
export const SKIP: ValueSink = { object: () => SKIP_OBJECT, array: () => SKIP_ARRAY, scalar() {} };

/**
 * Builds the value as JSON.parse would and hands it to `done`: a repeated key keeps its first
 * place and its last value, and `__proto__` is an own property, never the prototype.
 */
export function buildInto(done: (value: unknown) => void): ValueSink {
  return {
    object() {
      const object: Record<string, unknown> = {};
      return {
        member: (key) =>
          buildInto((value) => {
            Object.defineProperty(object, key, { value, writable: true, enumerable: true, configurable: true });
          }),
        end: () => done(object),
      };
    },
    array() {
      const array: unknown[] = [];
      return { element: () => buildInto((value) => array.push(value)), end: () => done(array) };
    },
    scalar: done,
  };
}

/** The JSON is malformed (the tokenizer's or the grammar's complaint). */
export class JsonSyntaxError extends Error {
  override name = "JsonSyntaxError";
}

type Frame =
  | { kind: "object"; sink: ObjectSink; state: "keyOrEnd" | "key" | "colon" | "value" | "commaOrEnd"; key: string }
  | { kind: "array"; sink: ArraySink; state: "valueOrEnd" | "value" | "commaOrEnd"; index: number };

/**
 * Pushes bytes through the tokenizer and the grammar into `root`. `write` and `end` throw a
 * JsonSyntaxError on malformed JSON (a sink's own exception goes through as it is); after one,
 * the reader takes nothing more.
 */
export class JsonStreamReader {
  private readonly tokenizer = new Tokenizer();
  private readonly stack: Frame[] = [];
  private rootState: "value" | "done" = "value";
  private failed = false;
  /** Bytes written so far, and whether the first one that is neither whitespace nor a leading byte-order mark came (beforeFirstToken). */
  private offset = 0;
  private started = false;
  private leadingMark = false;
  /** What a sink (or the grammar) threw, told apart from the tokenizer's own errors. */
  private thrown: unknown = undefined;

  constructor(private readonly root: ValueSink) {
    this.tokenizer.onToken = ({ token, value }) => {
      try {
        this.token(token, value as JsonScalar);
      } catch (error) {
        this.thrown = error;
        throw error;
      }
    };
  }

  write(bytes: Uint8Array): void {
    if (this.failed) return;
    if (!this.started) this.beforeFirstToken(bytes);
    this.offset += bytes.length;
    try {
      this.tokenizer.write(bytes);
    } catch (error) {
      this.fail(error);
    }
  }

  end(): void {
    if (this.failed) return;
    try {
      this.tokenizer.end();
    } catch (error) {
      this.fail(error);
    }
    if (this.rootState !== "done" || this.stack.length > 0) this.fail(new JsonSyntaxError("The JSON ends before its value does."));
  }

  /**
   * A byte-order mark is the body's first three bytes or nothing: the whole body is decoded by a
   * TextDecoder, which drops one there only, and JSON.parse refuses U+FEFF anywhere. The tokenizer
   * also skips one after leading whitespace, so that is refused here, up to the first byte that is
   * neither whitespace nor the leading mark (after it, a 0xEF lead byte is in a string or the
   * tokenizer's own error).
   */
  private beforeFirstToken(bytes: Uint8Array): void {
    for (let i = 0; i < bytes.length; i++) {
      const at = this.offset + i;
      const byte = bytes[i]!;
      if (at < 3 && byte === BOM[at] && (at === 0 || this.leadingMark)) {
        this.leadingMark = true;
        continue;
      }
      if (byte === 0x20 || byte === 0x09 || byte === 0x0a || byte === 0x0d) continue;
      if (byte === BOM[0]) this.fail(new JsonSyntaxError("A byte-order mark may only begin the body."));
      this.started = true;
      return;
    }
  }

  private fail(error: unknown): never {
    this.failed = true;
    // The tokenizer's own errors (its message, or its strict UTF-8 decoder's) are syntax errors.
    if (error === this.thrown || error instanceof JsonSyntaxError) throw error;
    throw new JsonSyntaxError(error instanceof Error ? error.message : String(error));
  }

  /** The sink of the value starting now, or a syntax error when no value may start here. */
  private valueSink(): ValueSink {
    const top = this.stack.at(-1);
    if (!top) {
      if (this.rootState !== "value") throw new JsonSyntaxError("Unexpected data after the JSON value.");
      this.rootState = "done";
      return this.root;
    }
    if (top.kind === "object") {
      if (top.state !== "value") throw new JsonSyntaxError("Unexpected value in an object.");
      top.state = "commaOrEnd";
      return top.sink.member(top.key);
    }
    if (top.state === "commaOrEnd") throw new JsonSyntaxError("Missing comma in an array.");
    top.state = "commaOrEnd";
    return top.sink.element(top.index++);
  }

  private token(token: TokenType, value: JsonScalar): void {
    const top = this.stack.at(-1);
    switch (token) {
      case TokenType.LEFT_BRACE:
        this.stack.push({ kind: "object", sink: this.valueSink().object(), state: "keyOrEnd", key: "" });
        return;
      case TokenType.LEFT_BRACKET:
        this.stack.push({ kind: "array", sink: this.valueSink().array(), state: "valueOrEnd", index: 0 });
        return;
      case TokenType.RIGHT_BRACE:
        if (top?.kind !== "object" || (top.state !== "keyOrEnd" && top.state !== "commaOrEnd"))
          throw new JsonSyntaxError("Unexpected '}'.");
        this.stack.pop();
        top.sink.end();
        return;
      case TokenType.RIGHT_BRACKET:
        if (top?.kind !== "array" || top.state === "value") throw new JsonSyntaxError("Unexpected ']'.");
        this.stack.pop();
        top.sink.end();
        return;
      case TokenType.COLON:
        if (top?.kind !== "object" || top.state !== "colon") throw new JsonSyntaxError("Unexpected ':'.");
        top.state = "value";
        return;
      case TokenType.COMMA:
        if (!top || top.state !== "commaOrEnd") throw new JsonSyntaxError("Unexpected ','.");
        top.state = top.kind === "object" ? "key" : "value";
        return;
      case TokenType.STRING:
        if (top?.kind === "object" && (top.state === "keyOrEnd" || top.state === "key")) {
          top.key = value as string;
          top.state = "colon";
          return;
        }
        this.valueSink().scalar(value);
        return;
      case TokenType.NUMBER:
      case TokenType.TRUE:
      case TokenType.FALSE:
      case TokenType.NULL:
        this.valueSink().scalar(value);
        return;
      default:
        throw new JsonSyntaxError("Unexpected token.");
    }
  }
}
