/**
 * A local stand-in for Neon's WebSocket proxy (development and tests only).
 *
 * The Neon driver inside workerd opens `ws://<proxy>/v2?address=host:port` (the Worker sets
 * `neonConfig.wsProxy` when LOCAL_NEON_PROXY is bound) and speaks Postgres' wire protocol in
 * binary frames. This server upgrades such requests and pipes the frames both ways to a TCP
 * connection to host:port. It listens on 127.0.0.1 only and connects to loopback targets only,
 * so it can never be used to reach another machine.
 *
 * It also counts connections, round trips (flights) and statements, and can emulate the network
 * between the Worker and the database (RTT/2 each way, plus the handshakes of a `wss://`
 * connection): definitions in wire-meter.ts and docs/edge-path.md. Off (0 ms) by default. Its
 * counters: `bridge.counters()` in process, or `GET /__bridge/counters` on its port; the network:
 * `GET`/`PUT /__bridge/emulation?rtt_ms=150&handshake_rtts=3`.
 */
import { type IncomingMessage, type Server, type ServerResponse, createServer } from "node:http";
import { type Socket, connect } from "node:net";
import type { Duplex } from "node:stream";
import { type RawData, type WebSocket, WebSocketServer } from "ws";
import {
  type BridgeCounters,
  type BridgeEmulation,
  type BridgeReport,
  DelayLine,
  NO_EMULATION,
  WireMeter,
  emptyCounters,
  parseEmulation,
} from "./wire-meter";

export type { BridgeCounters, BridgeEmulation, BridgeReport } from "./wire-meter";

export type WebSocketBridgeOptions = {
  /** Port to listen on (127.0.0.1); 0 or unset picks a free one. */
  port?: number;
  /** Receives one line per refused or failed connection; defaults to console.warn. */
  log?: (message: string) => void;
  /** The network emulated between the Worker and the database (docs/edge-path.md); none by default. */
  emulation?: Partial<BridgeEmulation>;
};

export type WebSocketBridge = {
  /** `127.0.0.1:PORT`, the value for the Worker's LOCAL_NEON_PROXY binding. */
  proxyAddress: string;
  port: number;
  /** Since the bridge started: connections, handshake round trips, flights, statements, in total and per application_name (docs/edge-path.md). */
  counters(): BridgeReport;
  /** The emulated network now in force. */
  emulation(): BridgeEmulation;
  /** Changes the emulated network for connections opened from now on and for data sent from now on. */
  setEmulation(emulation: Partial<BridgeEmulation>): BridgeEmulation;
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

type Network = { counters: BridgeCounters; countersOf: (applicationName: string) => BridgeCounters; emulation: () => BridgeEmulation };

/**
 * Pipes one WebSocket to one TCP connection until either side ends, metering the wire protocol
 * (wire-meter.ts) and delaying each direction by RTT/2 when a network is emulated.
 */
function tunnel(ws: WebSocket, tcp: Socket, log: (message: string) => void, target: string, network: Network): void {
  const meter = new WireMeter(network.counters, { handshakeRtts: network.emulation().handshakeRtts, countersOf: network.countersOf });
  const oneWay = () => network.emulation().rttMs / 2;
  let closed = false;
  const toServer = new DelayLine((chunk) => {
    if (!tcp.destroyed && tcp.writable) tcp.write(chunk);
  }, oneWay);
  const toClient = new DelayLine((chunk) => {
    if (ws.readyState !== ws.OPEN) return;
    meter.deliveredToClient();
    ws.send(chunk, { binary: true });
    if (ws.bufferedAmount > HIGH_WATER_MARK && !tcp.isPaused()) {
      tcp.pause();
      const resume = () => (ws.bufferedAmount > HIGH_WATER_MARK ? setTimeout(resume, 5) : tcp.resume());
      setTimeout(resume, 5);
    }
  }, oneWay);
  const closeBoth = (code: number, reason: string) => {
    if (closed) return;
    closed = true;
    // What is still on its way (a Terminate, the last answers) arrives first.
    toServer.drain(() => tcp.end());
    toClient.drain(() => {
      if (ws.readyState === ws.OPEN || ws.readyState === ws.CONNECTING) ws.close(code, reason);
    });
    // A peer that never acknowledges the close must not keep the socket forever.
    setTimeout(() => {
      toServer.clear();
      toClient.clear();
      ws.terminate();
      tcp.destroy();
    }, 2_000 + network.emulation().rttMs).unref();
  };

  ws.on("message", (data: RawData) => {
    if (tcp.destroyed || !tcp.writable) return;
    const chunks = Array.isArray(data) ? data : [data instanceof ArrayBuffer ? Buffer.from(data) : data];
    for (const chunk of chunks) for (const part of meter.fromClient(chunk)) toServer.push(part);
  });
  tcp.on("data", (chunk: Buffer) => {
    // A held pipelined password is decided by the server's first answer, at the server's side.
    for (const part of meter.fromServer(chunk)) if (!tcp.destroyed && tcp.writable) tcp.write(part);
    toClient.push(chunk);
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

/** The bridge's own HTTP endpoints (loopback only): its counters, and the emulated network. */
function answerControl(
  request: IncomingMessage,
  response: ServerResponse,
  bridge: Pick<WebSocketBridge, "counters" | "emulation" | "setEmulation">,
): boolean {
  const url = new URL(request.url ?? "/", "http://bridge.invalid");
  const json = (status: number, body: unknown) => {
    response.writeHead(status, { "content-type": "application/json" });
    response.end(JSON.stringify(body));
  };
  if (url.pathname === "/__bridge/counters" && request.method === "GET") {
    json(200, bridge.counters());
    return true;
  }
  if (url.pathname === "/__bridge/emulation" && (request.method === "GET" || request.method === "PUT")) {
    if (request.method === "PUT") {
      try {
        bridge.setEmulation(
          parseEmulation({ rttMs: url.searchParams.get("rtt_ms"), handshakeRtts: url.searchParams.get("handshake_rtts") }),
        );
      } catch (error) {
        json(400, { error: (error as Error).message });
        return true;
      }
    }
    json(200, bridge.emulation());
    return true;
  }
  return false;
}

export async function startWebSocketBridge(options: WebSocketBridgeOptions = {}): Promise<WebSocketBridge> {
  const log = options.log ?? ((message: string) => console.warn(`[local-neon bridge] ${message}`));
  const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false, maxPayload: 256 * 1024 * 1024 });
  wss.on("error", (error) => log(`server error: ${error.message}`));
  const tunnels = new Set<{ ws: WebSocket; tcp: Socket }>();
  const counters = emptyCounters();
  const byApplication = new Map<string, BridgeCounters>();
  const countersOf = (applicationName: string) => {
    let entry = byApplication.get(applicationName);
    if (!entry) byApplication.set(applicationName, (entry = emptyCounters()));
    return entry;
  };
  let emulation: BridgeEmulation = { ...NO_EMULATION, ...options.emulation };
  const network: Network = { counters, countersOf, emulation: () => emulation };
  const control = {
    counters: (): BridgeReport => ({
      ...counters,
      byApplication: Object.fromEntries([...byApplication].map(([name, entry]) => [name, { ...entry }])),
    }),
    emulation: () => ({ ...emulation }),
    setEmulation(change: Partial<BridgeEmulation>) {
      emulation = { ...emulation, ...change };
      return { ...emulation };
    },
  };

  const server: Server = createServer((request, response) => {
    if (answerControl(request, response, control)) return;
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
    const upgrade = () => {
      if (socket.destroyed) return;
      wss.handleUpgrade(request, socket, head, (ws) => {
        // Writes before the TCP connection is up are buffered by the socket.
        const tcp = connect({ host: target.host, port: target.port });
        tcp.setNoDelay(true);
        const entry = { ws, tcp };
        tunnels.add(entry);
        tcp.on("close", () => tunnels.delete(entry));
        tunnel(ws, tcp, log, label, network);
      });
    };
    // The handshakes a wss:// connection pays before the 101 (TCP, TLS, the upgrade itself).
    const handshakeMs = emulation.rttMs * emulation.handshakeRtts;
    if (handshakeMs > 0) setTimeout(upgrade, handshakeMs);
    else upgrade();
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
    ...control,
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
