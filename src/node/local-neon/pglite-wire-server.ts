/**
 * Serves a PGlite instance over Postgres' wire protocol on 127.0.0.1 (development and tests only),
 * so the Neon driver inside workerd can reach it through the WebSocket bridge.
 *
 * PGlite is one single-session backend. @electric-sql/pglite-socket accepts many connections but
 * multiplexes them message by message, so the Parse/Bind/Execute/Sync of two connections can
 * interleave on that one session ("portal does not exist", statements run in the wrong
 * transaction). A serialising gate in front of it fixes that:
 *
 * - one client connection at a time has the turn; the others' bytes wait in the gate;
 * - the turn is released only when every Sync/Query/startup it sent got its ReadyForQuery, the
 *   last one reported status 'I' (so a transaction keeps the turn until it ends) and no
 *   unsynchronised extended-protocol message is outstanding;
 * - the startup of a new connection also waits for the turn (it runs on the same session);
 * - Terminate closes the upstream connection (PGlite itself ignores it); a client that vanishes
 *   mid-batch or mid-transaction gets a Sync and a ROLLBACK on its behalf before the turn moves on;
 * - SSLRequest/GSSENCRequest are answered 'N' by the gate; CancelRequest is dropped.
 *
 * Each client connection gets its own upstream connection to pglite-socket, opened on its first turn.
 */
import { type Server, type Socket, connect, createServer } from "node:net";
import type { PGlite } from "@electric-sql/pglite";
import { PGLiteSocketServer } from "@electric-sql/pglite-socket";

export type PgliteWireServer = {
  /** The port of the gate (what clients connect to). */
  port: number;
  /** A connection string for the gate; PGlite trusts every user, the password is never asked for. */
  connectionString: string;
  close(): Promise<void>;
};

export type ServePgliteOptions = {
  /** Port for the gate on 127.0.0.1; 0 or unset picks a free one. */
  port?: number;
  /** Diagnostics (held turns, upstream failures); defaults to console.warn. */
  log?: (message: string) => void;
  /** Warn when one connection has held the turn this long while others wait (ms). */
  holdWarningMs?: number;
};

const SSL_REQUEST = 80877103;
const GSSENC_REQUEST = 80877104;
const CANCEL_REQUEST = 80877102;
const PROTOCOL_3 = 196608;
const SYNC = Buffer.from([0x53, 0, 0, 0, 4]);
const ROLLBACK = (() => {
  const sql = Buffer.from("ROLLBACK\0");
  const message = Buffer.alloc(5 + sql.length);
  message.write("Q", 0, "latin1");
  message.writeInt32BE(4 + sql.length, 1);
  sql.copy(message, 5);
  return message;
})();

/**
 * Streaming parser of typed messages (type byte + int32 length including itself). Calls `onMessage`
 * with the type and, for short messages, the body (ReadyForQuery's status byte lives there).
 */
class MessageScanner {
  #header = Buffer.alloc(5);
  #headerLength = 0;
  #type = 0;
  #remaining = 0;
  #body: Buffer[] = [];
  #keepBody = false;

  constructor(private readonly onMessage: (type: number, body: Buffer | null) => void) {}

  /** True between messages (nothing partial seen). */
  get atBoundary(): boolean {
    return this.#headerLength === 0 && this.#remaining === 0;
  }

  push(chunk: Buffer): void {
    let offset = 0;
    while (offset < chunk.length) {
      if (this.#remaining === 0 && this.#headerLength < 5) {
        const take = Math.min(5 - this.#headerLength, chunk.length - offset);
        chunk.copy(this.#header, this.#headerLength, offset, offset + take);
        this.#headerLength += take;
        offset += take;
        if (this.#headerLength < 5) return;
        this.#type = this.#header[0]!;
        const length = this.#header.readInt32BE(1);
        if (length < 4) throw new Error(`malformed message length ${length}`);
        this.#remaining = length - 4;
        this.#keepBody = this.#remaining <= 64;
        this.#body = [];
        if (this.#remaining === 0) this.#finish();
        continue;
      }
      const take = Math.min(this.#remaining, chunk.length - offset);
      if (this.#keepBody) this.#body.push(chunk.subarray(offset, offset + take));
      this.#remaining -= take;
      offset += take;
      if (this.#remaining === 0) this.#finish();
    }
  }

  #finish(): void {
    const body = this.#keepBody ? Buffer.concat(this.#body) : null;
    this.#headerLength = 0;
    this.#remaining = 0;
    this.#body = [];
    this.onMessage(this.#type, body);
  }
}

type Turn = { grant(): void };

/** FIFO of connections wanting the single PGlite session. */
class TurnGate {
  holder: Turn | null = null;
  holderSince = 0;
  readonly waiting: Turn[] = [];

  request(turn: Turn): void {
    if (this.holder === turn || this.waiting.includes(turn)) return;
    if (this.holder === null) this.#give(turn);
    else this.waiting.push(turn);
  }

  release(turn: Turn): void {
    const index = this.waiting.indexOf(turn);
    if (index >= 0) this.waiting.splice(index, 1);
    if (this.holder !== turn) return;
    this.holder = null;
    const next = this.waiting.shift();
    if (next) this.#give(next);
  }

  #give(turn: Turn): void {
    this.holder = turn;
    this.holderSince = Date.now();
    turn.grant();
  }
}

/** One client connection through the gate. */
class GatedConnection implements Turn {
  #phase: "startup" | "typed" = "startup";
  #startupBuffer = Buffer.alloc(0);
  /** Bytes received from the client, waiting for the turn (`startup`: the untyped StartupMessage). */
  #held: { chunk: Buffer; startup: boolean }[] = [];
  #upstream: Socket | null = null;
  #holding = false;
  /** ReadyForQuery messages still owed for what was forwarded. */
  #pending = 0;
  /** Extended-protocol messages forwarded since the last Sync. */
  #unsynced = false;
  #status = "I";
  #terminated = false;
  #closed = false;
  #abandoning = false;
  readonly #fromClient: MessageScanner;
  readonly #fromServer: MessageScanner;

  constructor(
    private readonly client: Socket,
    private readonly gate: TurnGate,
    private readonly upstreamPort: number,
    private readonly log: (message: string) => void,
    private readonly onGone: (connection: GatedConnection) => void,
  ) {
    this.#fromClient = new MessageScanner((type) => this.#clientMessage(type));
    this.#fromServer = new MessageScanner((type, body) => this.#serverMessage(type, body));
    client.setNoDelay(true);
    client.on("data", (chunk: Buffer) => this.#onClientData(chunk));
    client.on("error", () => this.#onClientGone());
    client.on("end", () => this.#onClientGone());
    client.on("close", () => this.#onClientGone());
  }

  grant(): void {
    this.#holding = true;
    if (this.#closed) {
      this.#finish();
      return;
    }
    if (!this.#upstream) this.#openUpstream();
    const held = this.#held;
    this.#held = [];
    for (const { chunk, startup } of held) this.#forward(chunk, startup);
    this.#maybeRelease();
  }

  /** Destroys both sides (server shutdown, protocol errors). */
  destroy(): void {
    this.client.destroy();
    this.#upstream?.destroy();
    this.#finish();
  }

  #openUpstream(): void {
    const upstream = connect({ host: "127.0.0.1", port: this.upstreamPort });
    upstream.setNoDelay(true);
    this.#upstream = upstream;
    upstream.on("data", (chunk: Buffer) => {
      try {
        this.#fromServer.push(chunk);
      } catch (error) {
        this.log(`unparseable data from PGlite: ${(error as Error).message}`);
        this.destroy();
        return;
      }
      if (!this.#closed && this.client.writable && !this.client.write(chunk) && !upstream.isPaused()) {
        upstream.pause();
        this.client.once("drain", () => upstream.resume());
      }
      this.#maybeRelease();
    });
    upstream.on("error", (error) => {
      if (!this.#terminated && !this.#closed) this.log(`upstream connection failed: ${error.message}`);
    });
    upstream.on("close", () => {
      this.#closed = true;
      this.client.end();
      this.#finish();
    });
  }

  #onClientData(chunk: Buffer): void {
    if (this.#closed) return;
    if (this.#phase === "startup") {
      this.#startupBuffer = Buffer.concat([this.#startupBuffer, chunk]);
      this.#readStartup();
      return;
    }
    this.#accept(chunk);
  }

  /** Untyped messages before the StartupMessage: answered here, or the StartupMessage itself. */
  #readStartup(): void {
    while (this.#phase === "startup" && this.#startupBuffer.length >= 8) {
      const length = this.#startupBuffer.readInt32BE(0);
      const code = this.#startupBuffer.readInt32BE(4);
      if (length < 8 || length > 10_000) {
        this.log(`invalid startup packet (length ${length}); closing`);
        this.destroy();
        return;
      }
      if (this.#startupBuffer.length < length) return;
      if (code === SSL_REQUEST || code === GSSENC_REQUEST) {
        this.#startupBuffer = this.#startupBuffer.subarray(length);
        this.client.write("N");
        continue;
      }
      if (code === CANCEL_REQUEST) {
        // No backend process to signal; the protocol expects no answer.
        this.destroy();
        return;
      }
      if (code !== PROTOCOL_3) {
        this.log(`unsupported protocol version ${code}; closing`);
        this.destroy();
        return;
      }
      const rest = this.#startupBuffer;
      this.#startupBuffer = Buffer.alloc(0);
      this.#phase = "typed";
      // The StartupMessage is untyped: account for it here and forward it unscanned.
      this.#accept(rest.subarray(0, length), true);
      if (rest.length > length) this.#accept(rest.subarray(length));
    }
  }

  #accept(chunk: Buffer, startup = false): void {
    if (this.#holding) this.#forward(chunk, startup);
    else {
      this.#held.push({ chunk, startup });
      this.gate.request(this);
    }
  }

  #forward(chunk: Buffer, startup: boolean): void {
    const upstream = this.#upstream;
    if (!upstream || upstream.destroyed || upstream.writableEnded) return;
    if (startup) this.#pending++;
    else {
      try {
        this.#fromClient.push(chunk);
      } catch (error) {
        this.log(`unparseable data from client: ${(error as Error).message}`);
        this.destroy();
        return;
      }
    }
    upstream.write(chunk);
    if (this.#terminated) upstream.end();
  }

  #clientMessage(type: number): void {
    switch (String.fromCharCode(type)) {
      case "S": // Sync
        this.#pending++;
        this.#unsynced = false;
        break;
      case "Q": // Query
      case "F": // FunctionCall
        this.#pending++;
        break;
      case "X": // Terminate: PGlite ignores it, so end the upstream connection.
        this.#terminated = true;
        break;
      case "p": // password / SASL responses
      case "d": // CopyData
      case "c": // CopyDone
      case "f": // CopyFail
        break;
      default: // Parse, Bind, Describe, Execute, Close, Flush
        this.#unsynced = true;
    }
  }

  #serverMessage(type: number, body: Buffer | null): void {
    if (type === 0x5a /* Z: ReadyForQuery */) {
      this.#pending = Math.max(0, this.#pending - 1);
      this.#status = body && body.length > 0 ? String.fromCharCode(body[0]!) : "I";
    }
  }

  #maybeRelease(): void {
    if (!this.#holding || this.#terminated) return;
    if (this.#abandoning) {
      this.#continueAbandon();
      return;
    }
    if (this.#pending === 0 && this.#status === "I" && !this.#unsynced && this.#fromClient.atBoundary && this.#fromServer.atBoundary) {
      this.#holding = false;
      this.gate.release(this);
    }
  }

  #onClientGone(): void {
    if (this.#closed || this.#abandoning) return;
    if (this.#terminated || !this.#upstream) {
      this.#closed = true;
      this.#upstream?.end();
      if (!this.#upstream) this.#finish();
      return;
    }
    if (!this.#holding) {
      // Nothing of ours is running on the session: just close.
      this.#closed = true;
      this.#upstream.end();
      return;
    }
    // The client left while holding the turn: bring the session back to idle before moving on.
    this.#abandoning = true;
    if (!this.#fromClient.atBoundary) {
      // A partial message went upstream; the session cannot be repaired message-wise.
      this.log("client disconnected mid-message; dropping its upstream connection");
      this.#closed = true;
      this.#upstream.destroy();
      return;
    }
    const timer = setTimeout(() => {
      this.log("client abandoned its turn and the session did not settle; dropping its upstream connection");
      this.#closed = true;
      this.#upstream?.destroy();
    }, 10_000);
    timer.unref();
    this.#upstream.once("close", () => clearTimeout(timer));
    if (this.#unsynced) {
      this.#unsynced = false;
      this.#pending++;
      this.#upstream.write(SYNC);
    }
    this.#continueAbandon();
  }

  #continueAbandon(): void {
    const upstream = this.#upstream;
    if (!upstream || this.#closed) return;
    if (this.#pending > 0) return;
    if (this.#status !== "I") {
      this.#pending++;
      this.#status = "I";
      upstream.write(ROLLBACK);
      return;
    }
    this.#closed = true;
    upstream.end();
  }

  /** Both sides are done: give the turn away (after the upstream closed, so pglite-socket has detached). */
  #finish(): void {
    this.#closed = true;
    this.#holding = false;
    this.#held = [];
    this.gate.release(this);
    this.onGone(this);
  }
}

/** Serves `pglite` on 127.0.0.1 through pglite-socket and the serialising gate. */
export async function servePglite(pglite: PGlite, options: ServePgliteOptions = {}): Promise<PgliteWireServer> {
  const log = options.log ?? ((message: string) => console.warn(`[pglite wire] ${message}`));
  const socketServer = new PGLiteSocketServer({
    db: pglite,
    host: "127.0.0.1",
    port: 0,
    // The gate serialises; connections beyond pglite-socket's default of 1 would be refused.
    maxConnections: 10_000,
  });
  socketServer.addEventListener("error", (event) => log(`pglite-socket: ${String((event as CustomEvent).detail?.message ?? event)}`));
  await socketServer.start();
  const upstreamPort = Number(socketServer.getServerConn().split(":").pop());

  const gate = new TurnGate();
  const connections = new Set<GatedConnection>();
  const server: Server = createServer((client) => {
    const connection = new GatedConnection(client, gate, upstreamPort, log, (gone) => connections.delete(gone));
    connections.add(connection);
  });
  server.maxConnections = 10_000;

  const holdWarningMs = options.holdWarningMs ?? 30_000;
  let warnedFor: Turn | null = null;
  const watchdog = setInterval(() => {
    if (gate.holder && gate.waiting.length > 0 && Date.now() - gate.holderSince > holdWarningMs && warnedFor !== gate.holder) {
      warnedFor = gate.holder;
      log(
        `one connection has held PGlite for ${Math.round((Date.now() - gate.holderSince) / 1000)} s (open transaction?); ${gate.waiting.length} waiting`,
      );
    }
  }, 1_000);
  watchdog.unref();

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  server.on("error", (error) => log(`gate server error: ${error.message}`));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("the PGlite gate has no TCP address");
  const port = address.port;

  let closing: Promise<void> | undefined;
  return {
    port,
    connectionString: `postgres://postgres:postgres@127.0.0.1:${port}/postgres`,
    close() {
      closing ??= (async () => {
        clearInterval(watchdog);
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          for (const connection of connections) connection.destroy();
          connections.clear();
        });
        await socketServer.stop();
      })();
      return closing;
    },
  };
}
