/**
 * What the local WebSocket bridge measures and emulates between the Worker and the database
 * (development, tests and `npm run bench:edge` only; docs/edge-path.md).
 *
 * Counting, per connection, from the Postgres wire protocol going through the bridge:
 * - a **flight** (round trip) is a client→server burst of messages, other than a lone Terminate,
 *   sent when the client has heard from the server since its previous burst (or on a fresh
 *   connection). The client then waits for the server before sending anything else, so each
 *   flight costs one RTT. Messages sent before any answer came back (pipelining: startup, password
 *   and first query together; Parse/Bind/Execute/Sync) belong to the same flight.
 * - a **statement** is a Parse or a simple Query message.
 * - a new connection (counted at its StartupMessage) is charged `handshakeRtts` round trips (TCP,
 *   TLS 1.3, WebSocket upgrade: 3), which the bridge cannot observe on loopback.
 * Counts are kept in total and per `application_name` of the session (the Worker names its
 * sessions by handler: src/worker/neon.ts), so a request's and the queue consumer's can be told apart.
 *
 * Emulation: with `rttMs` > 0, data is delivered RTT/2 late in each direction, and a new
 * connection's upgrade is answered `handshakeRtts × rttMs` late. Off (0 ms) by default.
 *
 * Password pipelining: the Neon driver sends StartupMessage, PasswordMessage and its first query
 * in one flight (`pipelineConnect: "password"`, its production default), as Neon's proxy expects.
 * A local server that trusts the connection answers AuthenticationOk without asking for the
 * password and would take the unasked PasswordMessage for a protocol violation, so the bridge holds
 * a PasswordMessage that arrives before the server's first answer, and drops it when the server
 * says AuthenticationOk (forwarding it otherwise), as Neon's proxy consumes the password itself.
 */

export type BridgeEmulation = {
  /** Round-trip time between the Worker and the database, in ms (one way = RTT/2). 0 = no delay. */
  rttMs: number;
  /** Round trips a new `wss://` connection pays before its first message: TCP 1 + TLS 1.3 1 + WebSocket upgrade 1. */
  handshakeRtts: number;
};

export const NO_EMULATION: BridgeEmulation = { rttMs: 0, handshakeRtts: 3 };

export type BridgeCounters = {
  /** WebSocket connections opened (each a Postgres session). */
  connections: number;
  /** `handshakeRtts` per connection. */
  handshakeRoundTrips: number;
  /** Flights, as defined above. */
  flights: number;
  /** Parse and Query messages. */
  statements: number;
};

/** The totals, and the same per application_name of the sessions ("" when a session gave none). */
export type BridgeReport = BridgeCounters & { byApplication: Record<string, BridgeCounters> };

export function emptyCounters(): BridgeCounters {
  return { connections: 0, handshakeRoundTrips: 0, flights: 0, statements: 0 };
}

/** `after − before`, field by field. */
export function countersBetween(before: BridgeCounters, after: BridgeCounters): BridgeCounters {
  return {
    connections: after.connections - before.connections,
    handshakeRoundTrips: after.handshakeRoundTrips - before.handshakeRoundTrips,
    flights: after.flights - before.flights,
    statements: after.statements - before.statements,
  };
}

/** Reads a positive-or-zero emulation from env-like text values (BRIDGE_RTT_MS, BRIDGE_HANDSHAKE_RTTS). */
export function parseEmulation(values: { rttMs?: string | null; handshakeRtts?: string | null }): Partial<BridgeEmulation> {
  const out: Partial<BridgeEmulation> = {};
  for (const [key, raw] of Object.entries(values) as [keyof BridgeEmulation, string | null | undefined][]) {
    if (raw === undefined || raw === null || raw === "") continue;
    const value = Number(raw);
    if (!Number.isFinite(value) || value < 0 || value > 60_000)
      throw new Error(`${key} must be a number of at least 0, got ${JSON.stringify(raw)}`);
    out[key] = value;
  }
  return out;
}

/** Longest untyped message read whole (a StartupMessage is a few hundred bytes). */
const MAX_UNTYPED = 10_000;
const SSL_REQUEST = 80877103;
const GSSENC_REQUEST = 80877104;
const PROTOCOL_3 = 196608;
const TYPE_PASSWORD = 0x70; // 'p'
const TYPE_TERMINATE = 0x58; // 'X'
const TYPE_QUERY = 0x51; // 'Q'
const TYPE_PARSE = 0x50; // 'P'
const TYPE_AUTHENTICATION = 0x52; // 'R'

/** The name/value pairs of a StartupMessage's body (after its length and protocol code). */
function startupParameters(body: Buffer): Map<string, string> {
  const parts = body.toString("utf8").split("\0");
  const parameters = new Map<string, string>();
  for (let i = 0; i + 1 < parts.length && parts[i] !== ""; i += 2) parameters.set(parts[i]!, parts[i + 1]!);
  return parameters;
}

/**
 * The meter of one connection. `fromClient` is called with what the client sent, as it arrives
 * at the bridge, and returns what to forward to the server now; `fromServer` with what the server
 * sent, as it arrives, and returns client bytes it released (a held password); `deliveredToClient`
 * when server bytes reach the client (after the emulated delay).
 */
export class WireMeter {
  /** Untyped messages first (SSLRequest, StartupMessage), then typed ones; `opaque` after TLS inside the tunnel. */
  #clientPhase: "untyped" | "typed" | "opaque" = "untyped";
  #untyped = Buffer.alloc(0);
  /** Where counts go: the bridge's totals, then also the session's application's (known from its StartupMessage). */
  #sinks: BridgeCounters[];
  #clientHeader = Buffer.alloc(5);
  #clientHeaderLength = 0;
  #clientRemaining = 0;
  /** Server answers to SSLRequest/GSSENCRequest still owed (one untyped byte each). */
  #serverUntypedBytes = 0;
  #serverHeader = Buffer.alloc(5);
  #serverAuthCode = Buffer.alloc(4);
  /** Bytes of an Authentication message's code still to read. */
  #serverAuthBytes = 0;
  #serverHeaderLength = 0;
  #serverRemaining = 0;
  #serverOpaque = false;
  /** The client heard from the server since its last burst (a fresh connection counts as heard). */
  #answered = true;
  /** Nothing came from the server yet: a PasswordMessage now is a pipelined one. */
  #serverSilent = true;
  #authDecided = false;
  /** Client bytes held from a pipelined PasswordMessage on, until the server's first Authentication message. */
  #held: Buffer[] | null = null;
  #heldPasswordLength = 0;

  constructor(
    totals: BridgeCounters,
    private readonly session: { handshakeRtts: number; countersOf?: (applicationName: string) => BridgeCounters },
  ) {
    this.#sinks = [totals];
  }

  /** The StartupMessage: the session is counted (under its application_name too) from here. */
  #started(parameters: Map<string, string>): void {
    const application = this.session.countersOf?.(parameters.get("application_name") ?? "");
    if (application) this.#sinks.push(application);
    for (const sink of this.#sinks) {
      sink.connections++;
      sink.handshakeRoundTrips += this.session.handshakeRtts;
    }
  }

  fromClient(chunk: Buffer): Buffer[] {
    if (this.#clientPhase === "opaque") {
      this.#countFlight();
      return [chunk];
    }
    const out: Buffer[] = [];
    let offset = 0;
    let forwardFrom = 0;
    const emit = (to: number) => {
      if (to > forwardFrom) (this.#held ?? out).push(chunk.subarray(forwardFrom, to));
      forwardFrom = to;
    };
    while (offset < chunk.length) {
      if (this.#clientPhase === "untyped") {
        // An untyped message (SSLRequest, StartupMessage), read whole: it is small.
        const need = this.#untyped.length < 4 ? 4 : Math.min(this.#untyped.readInt32BE(0), MAX_UNTYPED);
        const take = Math.min(need - this.#untyped.length, chunk.length - offset);
        this.#untyped = Buffer.concat([this.#untyped, chunk.subarray(offset, offset + take)]);
        offset += take;
        if (this.#untyped.length < 4) continue;
        const length = this.#untyped.readInt32BE(0);
        if (length < 8 || length > MAX_UNTYPED) {
          this.#clientPhase = "opaque";
          break;
        }
        if (this.#untyped.length < length) continue;
        const message = this.#untyped;
        this.#untyped = Buffer.alloc(0);
        const code = message.readInt32BE(4);
        if (code === PROTOCOL_3) this.#started(startupParameters(message.subarray(8)));
        this.#countFlight();
        if (code === SSL_REQUEST || code === GSSENC_REQUEST) this.#serverUntypedBytes++;
        else if (code === PROTOCOL_3) this.#clientPhase = "typed";
        else this.#clientPhase = "opaque";
        continue;
      }
      if (this.#clientPhase === "opaque") break;
      if (this.#clientRemaining === 0) {
        const take = Math.min(5 - this.#clientHeaderLength, chunk.length - offset);
        if (this.#clientHeaderLength === 0) {
          // A message starts here.
          const type = chunk[offset]!;
          if (type === TYPE_PASSWORD && this.#serverSilent && !this.#authDecided && this.#held === null) {
            emit(offset);
            this.#held = [];
            this.#heldPasswordLength = -1;
          }
          if (type !== TYPE_TERMINATE) this.#countFlight();
          if (type === TYPE_QUERY || type === TYPE_PARSE) for (const sink of this.#sinks) sink.statements++;
        }
        chunk.copy(this.#clientHeader, this.#clientHeaderLength, offset, offset + take);
        this.#clientHeaderLength += take;
        offset += take;
        if (this.#clientHeaderLength < 5) break;
        const length = this.#clientHeader.readInt32BE(1);
        if (this.#held && this.#heldPasswordLength === -1) this.#heldPasswordLength = 1 + length;
        this.#clientHeaderLength = 0;
        this.#clientRemaining = Math.max(0, length - 4);
        continue;
      }
      const take = Math.min(this.#clientRemaining, chunk.length - offset);
      this.#clientRemaining -= take;
      offset += take;
    }
    emit(chunk.length);
    return out;
  }

  fromServer(chunk: Buffer): Buffer[] {
    this.#serverSilent = false;
    if (this.#serverOpaque) return this.#decideAuth(false);
    let offset = 0;
    let released: Buffer[] = [];
    while (offset < chunk.length) {
      if (this.#serverUntypedBytes > 0) {
        this.#serverUntypedBytes--;
        const answer = String.fromCharCode(chunk[offset]!);
        offset++;
        if (answer === "S" || answer === "G") {
          // TLS or GSS inside the tunnel: nothing more can be read.
          this.#serverOpaque = true;
          this.#clientPhase = "opaque";
          return this.#decideAuth(false);
        }
        continue;
      }
      if (this.#serverRemaining === 0 && this.#serverAuthBytes === 0) {
        const take = Math.min(5 - this.#serverHeaderLength, chunk.length - offset);
        chunk.copy(this.#serverHeader, this.#serverHeaderLength, offset, offset + take);
        this.#serverHeaderLength += take;
        offset += take;
        if (this.#serverHeaderLength < 5) break;
        this.#serverHeaderLength = 0;
        const type = this.#serverHeader[0]!;
        const length = this.#serverHeader.readInt32BE(1);
        this.#serverRemaining = Math.max(0, length - 4);
        // The first Authentication message: its code (first 4 bytes of the body) decides a held password.
        if (type === TYPE_AUTHENTICATION && !this.#authDecided && this.#serverRemaining >= 4) this.#serverAuthBytes = 4;
        continue;
      }
      if (this.#serverAuthBytes > 0) {
        const take = Math.min(this.#serverAuthBytes, chunk.length - offset);
        chunk.copy(this.#serverAuthCode, 4 - this.#serverAuthBytes, offset, offset + take);
        this.#serverAuthBytes -= take;
        this.#serverRemaining -= take;
        offset += take;
        if (this.#serverAuthBytes === 0) released = released.concat(this.#decideAuth(this.#serverAuthCode.readInt32BE(0) === 0));
        continue;
      }
      const take = Math.min(this.#serverRemaining, chunk.length - offset);
      this.#serverRemaining -= take;
      offset += take;
    }
    return released;
  }

  deliveredToClient(): void {
    this.#answered = true;
  }

  #countFlight(): void {
    if (!this.#answered) return;
    this.#answered = false;
    for (const sink of this.#sinks) sink.flights++;
  }

  /** The server's first Authentication message: drop a held password it did not ask for, release the rest. */
  #decideAuth(authenticationOk: boolean): Buffer[] {
    if (this.#authDecided) return [];
    this.#authDecided = true;
    const held = this.#held;
    this.#held = null;
    if (!held) return [];
    const bytes = Buffer.concat(held);
    if (authenticationOk && this.#heldPasswordLength > 0 && bytes.length >= this.#heldPasswordLength)
      return [bytes.subarray(this.#heldPasswordLength)];
    return [bytes];
  }
}

/**
 * Delivers chunks `delayMs()` after they were pushed, in order. With a delay of 0 and nothing
 * queued, delivers at once (the bridge without emulation behaves exactly as before).
 */
export class DelayLine {
  #queue: { due: number; chunk: Buffer | null; then?: () => void }[] = [];
  #timer: ReturnType<typeof setTimeout> | null = null;
  #lastDue = 0;

  constructor(
    private readonly deliver: (chunk: Buffer) => void,
    private readonly delayMs: () => number,
  ) {}

  push(chunk: Buffer): void {
    this.#enqueue({ chunk });
  }

  /** Runs `then` once everything pushed before has been delivered. */
  drain(then: () => void): void {
    this.#enqueue({ chunk: null, then });
  }

  clear(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    this.#queue = [];
  }

  #enqueue(item: { chunk: Buffer | null; then?: () => void }): void {
    const delay = this.delayMs();
    if (delay <= 0 && this.#queue.length === 0) {
      if (item.chunk) this.deliver(item.chunk);
      item.then?.();
      return;
    }
    const due = Math.max(performance.now() + delay, this.#lastDue);
    this.#lastDue = due;
    this.#queue.push({ due, ...item });
    this.#schedule();
  }

  #schedule(): void {
    if (this.#timer || this.#queue.length === 0) return;
    this.#timer = setTimeout(
      () => {
        this.#timer = null;
        const now = performance.now();
        while (this.#queue.length > 0 && this.#queue[0]!.due <= now + 0.5) {
          const item = this.#queue.shift()!;
          if (item.chunk) this.deliver(item.chunk);
          item.then?.();
        }
        this.#schedule();
      },
      Math.max(0, this.#queue[0]!.due - performance.now()),
    );
  }
}
