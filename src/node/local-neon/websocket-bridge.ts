/**
 * A local stand-in for Neon's WebSocket proxy (development and tests only).
 *
 * The Neon driver inside workerd opens `ws://<proxy>/v2?address=host:port` (the Worker sets
 * `neonConfig.wsProxy` when LOCAL_NEON_PROXY is bound) and speaks Postgres' wire protocol in
 * binary frames. This server upgrades such requests and pipes the frames both ways to a TCP
 * connection to host:port. It listens on 127.0.0.1 only and connects to loopback targets only,
 * so it can never be used to reach another machine.
 */
import { type IncomingMessage, type Server, createServer } from "node:http";
import { type Socket, connect } from "node:net";
import type { Duplex } from "node:stream";
import { type RawData, type WebSocket, WebSocketServer } from "ws";

export type WebSocketBridgeOptions = {
  /** Port to listen on (127.0.0.1); 0 or unset picks a free one. */
  port?: number;
  /** Receives one line per refused or failed connection; defaults to console.warn. */
  log?: (message: string) => void;
};

export type WebSocketBridge = {
  /** `127.0.0.1:PORT`, the value for the Worker's LOCAL_NEON_PROXY binding. */
  proxyAddress: string;
  port: number;
  /** Closes every open tunnel and stops listening. */
  close(): Promise<void>;
};

const LOOPBACK_HOSTS = new Set(["127.0.0.1", "localhost", "::1", "[::1]"]);
/** Frames queued towards workerd beyond this pause the TCP side until the WebSocket drains. */
const HIGH_WATER_MARK = 1 << 20;

/** Parses `host:port` (IPv6 hosts in brackets or bare) into a loopback target, or explains why not. */
export function parseLoopbackTarget(address: string | null): { host: string; port: number } | { error: string } {
  if (!address) return { error: "missing address parameter" };
  const separator = address.lastIndexOf(":");
  if (separator <= 0) return { error: `address ${JSON.stringify(address)} is not host:port` };
  let host = address.slice(0, separator);
  const port = Number(address.slice(separator + 1));
  if (!Number.isInteger(port) || port < 1 || port > 65535) return { error: `address ${JSON.stringify(address)} has no valid port` };
  if (!LOOPBACK_HOSTS.has(host.toLowerCase())) return { error: `address ${JSON.stringify(address)} is not a loopback target` };
  if (host.startsWith("[")) host = host.slice(1, -1);
  return { host: host.toLowerCase(), port };
}

function refuse(socket: Duplex, status: number, reason: string): void {
  socket.on("error", () => {});
  socket.end(`HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
}

/** Pipes one WebSocket to one TCP connection until either side ends. */
function tunnel(ws: WebSocket, tcp: Socket, log: (message: string) => void, target: string): void {
  let closed = false;
  const closeBoth = (code: number, reason: string) => {
    if (closed) return;
    closed = true;
    if (ws.readyState === ws.OPEN || ws.readyState === ws.CONNECTING) ws.close(code, reason);
    tcp.end();
    // A peer that never acknowledges the close must not keep the socket forever.
    setTimeout(() => {
      ws.terminate();
      tcp.destroy();
    }, 2_000).unref();
  };

  ws.on("message", (data: RawData) => {
    if (tcp.destroyed || !tcp.writable) return;
    const chunks = Array.isArray(data) ? data : [data instanceof ArrayBuffer ? Buffer.from(data) : data];
    for (const chunk of chunks) tcp.write(chunk);
  });
  tcp.on("data", (chunk: Buffer) => {
    if (ws.readyState !== ws.OPEN) return;
    ws.send(chunk, { binary: true });
    if (ws.bufferedAmount > HIGH_WATER_MARK) {
      tcp.pause();
      const resume = () => (ws.bufferedAmount > HIGH_WATER_MARK ? setTimeout(resume, 5) : tcp.resume());
      setTimeout(resume, 5);
    }
  });

  ws.on("close", () => closeBoth(1000, ""));
  ws.on("error", (error) => {
    log(`websocket error (${target}): ${error.message}`);
    closeBoth(1011, "websocket error");
  });
  tcp.on("end", () => closeBoth(1000, ""));
  tcp.on("close", () => closeBoth(1000, ""));
  tcp.on("error", (error) => {
    log(`connection to ${target} failed: ${error.message}`);
    closeBoth(1011, "upstream error");
  });
}

export async function startWebSocketBridge(options: WebSocketBridgeOptions = {}): Promise<WebSocketBridge> {
  const log = options.log ?? ((message: string) => console.warn(`[local-neon bridge] ${message}`));
  const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false, maxPayload: 256 * 1024 * 1024 });
  wss.on("error", (error) => log(`server error: ${error.message}`));
  const tunnels = new Set<{ ws: WebSocket; tcp: Socket }>();

  const server: Server = createServer((_request, response) => {
    response.writeHead(426, { "content-type": "text/plain", connection: "close" });
    response.end("WebSocket upgrade to /v2?address=host:port expected.\n");
  });
  server.on("clientError", (_error, socket) => refuse(socket, 400, "Bad Request"));

  server.on("upgrade", (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on("error", (error) => log(`client socket error: ${error.message}`));
    const url = new URL(request.url ?? "/", "http://bridge.invalid");
    if (url.pathname !== "/v2") return refuse(socket, 404, "Not Found");
    const target = parseLoopbackTarget(url.searchParams.get("address"));
    if ("error" in target) {
      log(`refused: ${target.error}`);
      return refuse(socket, 403, "Forbidden");
    }
    const label = `${target.host}:${target.port}`;
    wss.handleUpgrade(request, socket, head, (ws) => {
      // Writes before the TCP connection is up are buffered by the socket.
      const tcp = connect({ host: target.host, port: target.port });
      tcp.setNoDelay(true);
      const entry = { ws, tcp };
      tunnels.add(entry);
      tcp.on("close", () => tunnels.delete(entry));
      tunnel(ws, tcp, log, label);
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  server.on("error", (error) => log(`server error: ${error.message}`));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("the bridge has no TCP address");

  let closing: Promise<void> | undefined;
  return {
    proxyAddress: `127.0.0.1:${address.port}`,
    port: address.port,
    close() {
      closing ??= new Promise<void>((resolve) => {
        for (const { ws, tcp } of tunnels) {
          ws.terminate();
          tcp.destroy();
        }
        tunnels.clear();
        wss.close();
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}
