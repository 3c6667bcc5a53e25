/**
 * The Node HTTP server around the app. Node's HTTP parser refuses some requests before any
 * handler runs (a control character in a header, an unknown or lower-case method, a request head
 * over 16 KiB, a timeout) and by default answers them with a bare status line and no body, or,
 * for CONNECT, not at all; @hono/node-server answers a Host or target it cannot turn into a URL
 * with an empty 400. Here every one of them gets the app's answer: the error envelope, with
 * `Content-Type: application/json; charset=utf-8`, `nosniff`, `no-store` and a `Request-Id`
 * (logged with the refusal), on a connection that is then closed.
 */
import { type IncomingMessage, type Server, type ServerResponse, createServer, maxHeaderSize } from "node:http";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import { RequestError, getRequestListener } from "@hono/node-server";
import { ApiError } from "../lib/errors";
import type { Logger } from "../lib/logger";

/** What the server knows of a request's connection: its peer's address (undefined once the socket has closed). */
export type Connection = { remoteAddress: string | undefined };

export type FetchHandler = (request: Request, connection: Connection) => Response | Promise<Response>;

const REASON_PHRASES: Record<number, string> = {
  400: "Bad Request",
  408: "Request Timeout",
  413: "Payload Too Large",
  431: "Request Header Fields Too Large",
  500: "Internal Server Error",
  503: "Service Unavailable",
};

/** The headers app.ts puts on every answer, for an answer made without the app. */
function envelopeHeaders(requestId: string, error: ApiError): Record<string, string> {
  return {
    "Content-Type": "application/json; charset=utf-8",
    "Request-Id": requestId,
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-store",
    ...error.headers,
  };
}

/** An envelope answer as a Response (for the request listener's own failures and the starting phase). */
export function envelopeResponse(error: ApiError, requestId: string = crypto.randomUUID()): Response {
  return new Response(JSON.stringify(error.toBody()), { status: error.status, headers: envelopeHeaders(requestId, error) });
}

/** An envelope answer as raw HTTP/1.1 text, for a socket no request object was made for. */
function rawEnvelopeResponse(error: ApiError, requestId: string): string {
  const body = JSON.stringify(error.toBody());
  const headers = { ...envelopeHeaders(requestId, error), "Content-Length": String(Buffer.byteLength(body)), Connection: "close" };
  const head = Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join("");
  return `HTTP/1.1 ${error.status} ${REASON_PHRASES[error.status] ?? "Error"}\r\n${head}\r\n${body}`;
}

/** What a parser error (Node's `clientError`) tells the client. */
function clientErrorAnswer(error: Error & { code?: string }): ApiError {
  switch (error.code) {
    case "HPE_HEADER_OVERFLOW":
      return new ApiError("request_header_fields_too_large", `The request line and headers exceed ${maxHeaderSize} bytes.`);
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return new ApiError("request_timeout", "The request was not received in time.");
    case "HPE_INVALID_METHOD":
      return new ApiError(
        "invalid_request",
        "The request method is not one this server knows (methods are case-sensitive: GET, POST, PATCH, DELETE…).",
      );
    case "HPE_INVALID_HEADER_TOKEN":
      return new ApiError(
        "invalid_request",
        "A request header has characters HTTP does not allow in its name or value (control characters, for instance).",
      );
    case "HPE_CHUNK_EXTENSIONS_OVERFLOW":
      return new ApiError("payload_too_large", "The chunk extensions of the request body are too large.");
    default:
      return new ApiError(
        "invalid_request",
        `The request is not valid HTTP/1.1${error.code?.startsWith("HPE_") ? ` (${error.code})` : ""}.`,
      );
  }
}

/** A request the listener could not turn into a fetch Request (bad Host, bad target): @hono/node-server's RequestError. */
function requestErrorAnswer(error: unknown): ApiError {
  if (error instanceof RequestError) {
    if (/missing host/i.test(error.message)) return new ApiError("invalid_request", "The request has no Host header.");
    if (/host/i.test(error.message)) return new ApiError("invalid_request", "The request's Host header is not a valid host name.");
    return new ApiError("invalid_request", "The request target or Host header does not make a valid URL.");
  }
  return new ApiError("internal_error", "An unexpected error occurred. Quote the Request-Id header when reporting it.");
}

/**
 * An HTTP server that hands requests to `fetch` (the app), and answers in the envelope what
 * never reaches it. Not listening yet.
 */
export function createNodeServer(fetch: FetchHandler, options: { logger: Logger }): Server {
  const { logger } = options;
  const refused = (error: ApiError, cause: string) => {
    const requestId = crypto.randomUUID();
    logger.info("request refused before the app", { requestId, status: error.status, code: error.code, cause });
    return requestId;
  };

  const listener = getRequestListener((request, bindings) => fetch(request, { remoteAddress: bindings.incoming.socket?.remoteAddress }), {
    errorHandler: (error) => {
      const answer = requestErrorAnswer(error);
      return envelopeResponse(answer, refused(answer, error instanceof Error ? error.message : String(error)));
    },
  });

  /** Writes the envelope and closes; a socket already answering (or gone) is just closed. */
  const answerOnSocket = (socket: Duplex, error: ApiError, cause: string) => {
    const inFlight = (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage;
    if (!socket.writable || inFlight?.headersSent) {
      socket.destroy();
      return;
    }
    socket.end(rawEnvelopeResponse(error, refused(error, cause)));
    // The server's sockets allow half-open connections: do not wait for the client to close.
    (socket as Socket).destroySoon?.();
  };

  // Without a Host header Node answers HTTP/1.1 requests with an empty 400 itself; the listener's
  // errorHandler answers it in the envelope instead.
  const server = createServer({ requireHostHeader: false }, listener);
  server.on("clientError", (error: Error & { code?: string }, socket: Duplex) => {
    if (error.code === "ECONNRESET") {
      socket.destroy();
      return;
    }
    answerOnSocket(socket, clientErrorAnswer(error), error.code ?? error.message);
  });
  // CONNECT never reaches a request listener: without this, Node drops the connection unanswered.
  server.on("connect", (_request: IncomingMessage, socket: Duplex) => {
    answerOnSocket(socket, new ApiError("invalid_request", "CONNECT is not supported: this server is not a proxy."), "CONNECT");
  });
  // `Expect` other than 100-continue: RFC 9110 lets a server ignore it, and the app then answers
  // the request (Node's default is an empty 417).
  server.on("checkExpectation", listener);
  return server;
}

/** Listens; resolves with the port (PORT=0 picks one), rejects if the address cannot be bound. */
export function listen(server: Server, port: number, host: string | undefined): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      const address = server.address();
      resolve(typeof address === "object" && address ? address.port : port);
    });
  });
}
