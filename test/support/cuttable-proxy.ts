/**
 * A TCP proxy in front of a database server that a test can cut: every open connection is reset
 * and new ones are refused until it is restored, on the same port. To the client it looks like
 * the server going away (ECONNRESET/EPIPE on open connections, ECONNREFUSED on new ones) and
 * coming back; the server behind it keeps running.
 */
import { type Server, type Socket, connect, createServer } from "node:net";

export class CuttableProxy {
  readonly #server: Server;
  readonly #target: { host: string; port: number };
  readonly #sockets = new Set<Socket>();
  #port = 0;
  /** Bytes sent from clients to the server, since the start. */
  bytesUp = 0;

  private constructor(target: { host: string; port: number }) {
    this.#target = target;
    this.#server = createServer((client) => this.#accept(client));
  }

  static async start(target: { host: string; port: number }): Promise<CuttableProxy> {
    const proxy = new CuttableProxy(target);
    await proxy.#listen(0);
    return proxy;
  }

  get port(): number {
    return this.#port;
  }

  /** Stops accepting connections and resets every open one, on both sides. */
  async cut(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    for (const socket of this.#sockets) socket.resetAndDestroy();
    this.#sockets.clear();
    await closed;
  }

  /** Accepts connections again, on the same port. */
  restore(): Promise<void> {
    return this.#listen(this.#port);
  }

  async close(): Promise<void> {
    if (this.#server.listening) await this.cut();
  }

  #listen(port: number): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#server.once("error", reject);
      this.#server.listen(port, "127.0.0.1", () => {
        this.#server.off("error", reject);
        this.#port = (this.#server.address() as { port: number }).port;
        resolve();
      });
    });
  }

  #accept(client: Socket): void {
    const upstream = connect(this.#target.port, this.#target.host);
    this.#sockets.add(client);
    this.#sockets.add(upstream);
    const drop = () => {
      client.destroy();
      upstream.destroy();
      this.#sockets.delete(client);
      this.#sockets.delete(upstream);
    };
    client.on("error", drop).on("close", drop);
    upstream.on("error", drop).on("close", drop);
    client.on("data", (chunk: Buffer) => (this.bytesUp += chunk.length));
    client.pipe(upstream);
    upstream.pipe(client);
  }
}
