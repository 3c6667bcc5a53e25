/**
 * The transport-agnostic part of the test harness: fixtures and request helpers built on a
 * `fetch`-like function, a database and a clock. test/support/harness.ts runs it on Node
 * (app.request); test/worker/support/harness.ts runs it inside workerd (SELF.fetch through the
 * Worker, the Neon driver and the Durable Object), so the same contract files run in both.
 */
import { createNodeBackground } from "../../src/node/background";
import { eq } from "drizzle-orm";
import type { AppConfig, RequestDeps } from "../../src/app-env";
import type { Logger } from "../../src/lib/logger";
import { InMemoryKeyCounter } from "../../src/auth/in-memory-key-counter";
import type { KeyCounter } from "../../src/auth/key-state";
import { alerts, testRuns } from "../../src/db/schema";
import type { Database } from "../../src/db/types";
import { ManualClock } from "../../src/lib/clock";
import { UPLOAD_LIMIT_BYTES } from "../../src/ingest/upload-body";
import { DEFAULT_RATE_LIMIT, type RateLimitPolicy } from "../../src/lib/rate-limit";
import { recordAlertEvent } from "../../src/services/alerts/alert-events";
import type { RunMetadata } from "../../src/ingest/upload-request";
import { type Report, completeTestRun, failTestRun, recordTestRunArrival } from "../../src/services/runs/test-runs";

import { createApp } from "../../src/app";
import { SecretKeyring } from "../../src/lib/secret-box";
import { type OutboundPolicy, guardedFetch } from "../../src/notifications/outbound-policy";
import { ADMIN_TOKEN, CURSOR_SECRET, PUBLIC_BASE_URL, SECRETS_KEY, WEB_APP_URL } from "./constants";

export { ADMIN_TOKEN, CURSOR_SECRET, PUBLIC_BASE_URL, SECRETS_KEY, WEB_APP_URL } from "./constants";

/**
 * The suites' operator allowance (OUTBOUND_ALLOW_HOSTS=127.0.0.1,localhost): their webhook receivers
 * listen on loopback, which the default policy refuses. The workerd suite's Worker has the same
 * binding (vitest.config.ts, the workerd tier).
 */
export const LOCAL_RECEIVERS_POLICY: OutboundPolicy = { allowHosts: ["127.0.0.1", "localhost"] };

/** The keyring of SECRETS_KEY, as the Worker of the workerd suite has it too. */
export const testSecrets = new SecretKeyring({ current: SECRETS_KEY });

export type CallOptions = {
  key?: string | null;
  body?: unknown;
  rawBody?: string | Uint8Array | ReadableStream<Uint8Array>;
  headers?: Record<string, string>;
};
export type CallResult = { status: number; headers: Headers; body: any; text: string };

import type { MailSettings } from "../../src/mail/transport";

export type HarnessOptions = {
  rateLimit?: RateLimitPolicy;
  adminToken?: string | undefined;
  /** Configuration or request dependencies to replace (the app is then built in process, also in workerd). */
  overrides?: Partial<AppConfig & RequestDeps>;
  /**
   * Outbound fetch and policy of notification deliveries (webhook tests): LOCAL_RECEIVERS_POLICY by
   * default, through the Node suite's checked connections (test/support/harness.ts) or, in workerd,
   * the runtime's fetch behind the policy's URL rules.
   */
  background?: {
    fetch?: typeof fetch;
    urlPolicy?: OutboundPolicy;
    deliveryRetryDelaysSeconds?: number[];
    mail?: MailSettings;
    emailRetryDelaysSeconds?: number[];
  };
};

/** Something that answers requests: the app itself (Node) or the Worker (workerd). */
export type RequestTarget = { request(path: string, init?: RequestInit): Promise<Response> };

/**
 * A client address no other request of the run has (a random IPv6 /64 of fd00::/8, the unique
 * local range): the harness's `app` sends each request from a new one, so the sign-in throttle's
 * per-address limit, shared by the files on one database, never meets a test that is not about
 * it. Those that are pick their addresses with `fromAddress`.
 */
export function uniqueClientAddress(): string {
  const words = crypto.getRandomValues(new Uint16Array(4));
  return `fd${(words[0]! & 0xff).toString(16).padStart(2, "0")}:${words[1]!.toString(16)}:${words[2]!.toString(16)}:${words[3]!.toString(16)}::1`;
}

/**
 * A key counter that works but hands back an admission that blows up when read: an unexpected
 * fault on every authenticated request, after authentication (the gate's "counter unreachable"
 * handling, which answers 503, only covers the call itself).
 */
export function faultyKeyCounter(message: string): KeyCounter {
  const inner = new InMemoryKeyCounter(new ManualClock(Date.now()), { limit: 1_000_000, windowMs: 60_000 });
  return {
    admit: async (keyId, resolution) => {
      const admission = await inner.admit(keyId, resolution);
      if (admission.status !== "admitted") return admission;
      return {
        status: "admitted",
        organizationId: admission.organizationId,
        get decision(): never {
          throw new Error(message);
        },
      };
    },
    revoke: (keyIds) => inner.revoke(keyIds),
  };
}

export function buildHarness(parts: {
  app: RequestTarget;
  /**
   * The same server, with every request from `address` as its runtime entry would find it
   * (RequestDeps.clientAddress in process; the Worker's CF-Connecting-IP through SELF); null: unknown.
   */
  fromAddress: (address: string | null) => RequestTarget;
  db: Database;
  clock: ManualClock;
  logs: string[];
  deps: Pick<AppConfig, "cursorSecret">;
  close: () => Promise<void>;
  /** The server's upload limit when it is not the interface's 32 MiB (the Worker's). */
  uploadLimitBytes?: number;
  /** The server's limit for a gzip report once inflated, when it is above its body limit (the Worker's: 256 MiB). */
  inflatedLimitBytes?: number;
}) {
  const { app, db, clock } = parts;
  /** What storing a run directly (newRun, completeTestRun) needs: health changes log to the harness's lines. */
  const storeDeps = { db, clock, logger: captureLogger(parts.logs), webAppUrl: WEB_APP_URL };

  async function call(method: string, path: string, options: CallOptions = {}): Promise<CallResult> {
    const headers: Record<string, string> = { ...options.headers };
    if (options.key) headers.authorization = `Bearer ${options.key}`;
    let body: RequestInit["body"] = options.rawBody as RequestInit["body"];
    if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers["content-type"] ??= "application/json";
    }
    // fetch needs duplex "half" to send a streamed (chunked) body.
    const streamed = typeof ReadableStream !== "undefined" && body instanceof ReadableStream;
    const response = await app.request(path, { method, headers, body, ...(streamed ? { duplex: "half" } : {}) } as RequestInit);
    const text = await response.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    return { status: response.status, headers: response.headers, body: parsed, text };
  }

  const admin = (method: string, path: string, body?: unknown) => call(method, `/admin/v1${path}`, { key: ADMIN_TOKEN, body });

  /** A new organization through the admin API; returns its API key. */
  async function newOrganization(name = "Org", timeZone?: string) {
    const res = await admin("POST", "/organizations", { name, ...(timeZone ? { time_zone: timeZone } : {}) });
    if (res.status !== 201) throw new Error(`creating an organization failed: ${res.status} ${res.text}`);
    return { organization: res.body.organization, apiKey: res.body.api_key.secret as string, apiKeyObject: res.body.api_key };
  }

  /** A new project through the admin API, with its four alerts. */
  async function newProject(organizationId: string, name = "Project", description?: string) {
    const res = await admin("POST", `/organizations/${organizationId}/projects`, {
      name,
      ...(description !== undefined ? { description } : {}),
    });
    if (res.status !== 201) throw new Error(`creating a project failed: ${res.status} ${res.text}`);
    const projectAlerts = await db.select().from(alerts).where(eq(alerts.projectId, res.body.project.id));
    const alertIds = Object.fromEntries(projectAlerts.map((a) => [a.alertType, a.id])) as Record<string, string>;
    return { project: res.body.project, uploadToken: res.body.upload_token as string, alertIds };
  }

  /** A run that arrives (pending) and, unless told otherwise, is processed with the given cases. */
  async function newRun(
    projectId: string,
    options: { meta?: RunMetadata; report?: Report; outcome?: "processed" | "pending" | "failed" } = {},
  ) {
    const { run } = await recordTestRunArrival({ db, clock }, projectId, options.meta);
    const outcome = options.outcome ?? "processed";
    if (outcome === "pending") return run;
    if (outcome === "failed") return (await failTestRun({ db, clock }, run.id, "could not parse the report"))!;
    const report = options.report ?? { suites: [{ name: "suite", cases: [{ name: "ok", status: "passed" as const, durationMs: 5 }] }] };
    const processed = await completeTestRun(storeDeps, run.id, report);
    if (!processed) throw new Error(`run ${run.id} was not pending`);
    return processed;
  }

  async function newEvent(alertId: string, testRunId: number, metadata: Record<string, unknown> = { note: "test" }) {
    return recordAlertEvent({ db, clock }, { alertId, testRunId, metadata });
  }

  /**
   * POST /uploads/v1/test_runs. A string or bytes body is sent as is (XML unless told otherwise);
   * an object is sent as the JSON envelope.
   */
  async function upload(
    token: string | null,
    body: unknown,
    options: { contentType?: string; query?: string; headers?: Record<string, string> } = {},
  ) {
    const isRaw =
      typeof body === "string" || body instanceof Uint8Array || (typeof ReadableStream !== "undefined" && body instanceof ReadableStream);
    const headers: Record<string, string> = {
      ...(options.contentType !== undefined
        ? { "content-type": options.contentType }
        : { "content-type": isRaw ? "application/xml" : "application/json" }),
      ...options.headers,
    };
    if (options.contentType === "") delete headers["content-type"];
    const path = `/uploads/v1/test_runs${options.query ? `?${options.query}` : ""}`;
    return call("POST", path, { key: token, headers, rawBody: isRaw ? body : JSON.stringify(body) });
  }

  /** Polls the run (upload token view) until it leaves `pending`; returns its final object. */
  async function waitForRun(token: string, number: number, timeoutMs = 30_000) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const res = await call("GET", `/uploads/v1/test_runs/${number}`, { key: token });
      if (res.status !== 200) throw new Error(`reading run ${number} failed: ${res.status} ${res.text}`);
      if (res.body.status !== "pending") return res.body;
      if (Date.now() > deadline) throw new Error(`run ${number} is still pending after ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  /** Uploads and waits for processing; fails unless the upload is accepted. */
  async function uploadAndWait(token: string, body: unknown, options: Parameters<typeof upload>[2] = {}) {
    const res = await upload(token, body, options);
    if (res.status !== 202) throw new Error(`upload failed: ${res.status} ${res.text}`);
    return waitForRun(token, res.body.number);
  }

  async function runRow(id: number) {
    const [row] = await db.select().from(testRuns).where(eq(testRuns.id, id));
    return row!;
  }

  return {
    app,
    fromAddress: parts.fromAddress,
    /** The largest upload this server takes (the Worker's is smaller than the interface's 32 MiB). */
    uploadLimitBytes: parts.uploadLimitBytes ?? UPLOAD_LIMIT_BYTES,
    /** The largest report a gzip body may inflate to on this server (the body limit unless the server takes more). */
    inflatedLimitBytes: Math.max(parts.inflatedLimitBytes ?? 0, parts.uploadLimitBytes ?? UPLOAD_LIMIT_BYTES),
    deps: parts.deps,
    storeDeps,
    db,
    clock,
    logs: parts.logs,
    call,
    get: (path: string, key?: string | null, options: CallOptions = {}) => call("GET", path, { ...options, key }),
    post: (path: string, key: string | null, body?: unknown, options: CallOptions = {}) => call("POST", path, { ...options, key, body }),
    patch: (path: string, key: string | null, body?: unknown, options: CallOptions = {}) => call("PATCH", path, { ...options, key, body }),
    admin,
    newOrganization,
    newProject,
    newRun,
    newEvent,
    upload,
    waitForRun,
    uploadAndWait,
    runRow,
    close: parts.close,
  };
}

export type Harness = ReturnType<typeof buildHarness>;

/** Every page of a listing, following next_cursor until has_more is false. */
export async function collectAll(h: Harness, path: string, key: string, limit: number) {
  const items: any[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const sep = path.includes("?") ? "&" : "?";
    const url = `${path}${sep}limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`;
    const res = await h.get(url, key);
    if (res.status !== 200) throw new Error(`page ${pages} of ${path} failed: ${res.status} ${res.text}`);
    items.push(...res.body.data);
    cursor = res.body.pagination.next_cursor;
    if (res.body.pagination.has_more !== (cursor !== null)) throw new Error("has_more and next_cursor disagree");
    pages++;
    if (pages > 10_000) throw new Error("pagination does not end");
  } while (cursor);
  return { items, pages };
}

/** A logger that keeps every line in `logs`, so tests can read what the app logged. */
export function captureLogger(logs: string[]): Logger {
  const keep = (message: string, fields?: Record<string, unknown>) => logs.push(JSON.stringify({ message, ...fields }));
  return { info: keep, error: keep };
}

/** The app built in process over `db`, with the harness's clock, secrets, captured logs and overrides. */
export function inProcessHarness(db: Database, options: HarnessOptions, close: () => Promise<void>) {
  const clock = harnessClock();
  const logs: string[] = [];
  const logger = captureLogger(logs);
  const {
    db: dbOverride,
    clock: clockOverride,
    keyCounter,
    uploadCounter,
    runQueue: queueOverride,
    logger: loggerOverride,
    clientAddress: addressOverride,
    ...configOverrides
  } = options.overrides ?? {};
  // The app and the background work share one keyring, as in the runtimes' entries.
  const secrets = configOverrides.secrets ?? testSecrets;
  const urlPolicy = options.background?.urlPolicy ?? LOCAL_RECEIVERS_POLICY;
  const background = { urlPolicy, fetch: guardedFetch(urlPolicy, (input, init) => fetch(input, init)), ...options.background };
  const { queue: runQueue, work } = createNodeBackground(
    { db, clock, logger, webAppUrl: WEB_APP_URL, secrets, ...background },
    { retryDelayMs: () => 10 },
  );
  const config: AppConfig = {
    cursorSecret: CURSOR_SECRET,
    adminToken: "adminToken" in options ? options.adminToken : ADMIN_TOKEN,
    publicBaseUrl: PUBLIC_BASE_URL,
    webAppUrl: WEB_APP_URL,
    webhookUrlPolicy: LOCAL_RECEIVERS_POLICY,
    ...configOverrides,
    secrets,
  };
  const policy = options.rateLimit ?? DEFAULT_RATE_LIMIT;
  const requestDeps: Omit<RequestDeps, "clientAddress"> = {
    db: dbOverride ?? db,
    clock: clockOverride ?? clock,
    keyCounter: keyCounter ?? new InMemoryKeyCounter(clock, policy),
    uploadCounter: uploadCounter ?? new InMemoryKeyCounter(clock, policy),
    runQueue: queueOverride ?? runQueue,
    logger: loggerOverride ?? logger,
  };
  const app = createApp(config);
  const fromAddress = (address: string | null): RequestTarget => ({
    request: async (path, init) => app.request(path, init, { ...requestDeps, clientAddress: address }),
  });
  const harness = buildHarness({
    app: {
      request: async (path, init) =>
        app.request(path, init, { ...requestDeps, clientAddress: addressOverride === undefined ? uniqueClientAddress() : addressOverride }),
    },
    fromAddress,
    db,
    clock,
    logs,
    deps: config,
    close,
  });
  return { ...harness, queue: runQueue, work };
}

/** A clock at the current whole second: the starting point of every harness. */
export function harnessClock(): ManualClock {
  return new ManualClock(Math.floor(Date.now() / 1000) * 1000);
}
