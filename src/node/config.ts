/** Reads the process environment once, for the Node entry; the app itself never sees process.env. */
import { configuredBaseUrl } from "../lib/base-url";
import { type AddressRange, parseTrustedProxies } from "../lib/client-address";
import { type Quotas, quotasFrom } from "../lib/quotas";
import { type SignUpMode, signUpModeFrom } from "../lib/sign-up-mode";
import { MIN_SECRETS_KEY_LENGTH, parseKeyList } from "../lib/secret-box";
import { parseSmtpUrl } from "../mail/transport";
import { runQuietPeriodMsFrom } from "../lib/run-quiet-period";
import { type Retention, retentionFrom } from "../lib/retention";
import { type OutboundPolicy, outboundPolicyFrom } from "../notifications/outbound-policy";
import { isPostgresUrl } from "./database";

export type NodeConfig = {
  port: number;
  host?: string;
  databaseUrl?: string;
  adminToken?: string;
  cursorSecret?: string;
  /** PUBLIC_BASE_URL as configured; unset → the listening origin (`publicUrls`). */
  publicBaseUrl?: string;
  /** WEB_APP_URL as configured; unset → the public base URL (`publicUrls`). */
  webAppUrl?: string;
  /** Seals webhook signing secrets; unset → a key file next to the embedded database (src/node/secrets-key.ts). */
  secretsKey?: string;
  /** Older keys, accepted for decryption while their secrets are re-sealed (docs/secrets.md). */
  secretsKeyPrevious: string[];
  seedDemo: boolean;
  /** SMTP_URL: where the outbox's mail is sent (docs/e-mail.md); unset → mail is held in the outbox. */
  smtpUrl?: string;
  /** MAIL_FROM: the From header; unset → `CI test analytics <no-reply@<web app host>>`. */
  mailFrom?: string;
  /**
   * Where webhooks may go and how many (docs/outbound-policy.md): OUTBOUND_ALLOW_HOSTS (unset →
   * none: loopback is refused too), WEBHOOKS_PER_ORGANIZATION, WEBHOOK_DELIVERIES_PER_MINUTE.
   */
  outbound: OutboundPolicy;
  /** Quotas per organization (docs/quotas.md): QUOTA_PROJECTS, QUOTA_UPLOADS_PER_HOUR, QUOTA_CONCURRENT_EXPORTS, QUOTA_STORED_CASES. */
  quotas: Quotas;
  /** SIGN_UP: who may create accounts (docs/accounts.md); unset → open. */
  signUp: SignUpMode;
  /**
   * TRUSTED_PROXIES: the proxies (addresses or CIDR ranges) whose X-Forwarded-For names the client
   * (src/lib/client-address.ts); unset → none: the connection's peer is the client.
   */
  trustedProxies: AddressRange[];
  /** RUN_QUIET_PERIOD_SECONDS in ms (docs/uploads.md, "Runs in parts"). */
  runQuietPeriodMs: number;
  /**
   * SCALE_OUT=true: several processes share one Postgres database (docs/scale-out.md): the queue
   * and the rate limits live in the database. Unset or false → this process's own, in memory.
   */
  scaleOut: boolean;
  /** RETENTION_DAYS and SUMMARY_RETENTION_DAYS (docs/retention.md). */
  retention: Retention;
};

/**
 * SCALE_OUT=true needs what every process must agree on: a Postgres server (PGlite is one
 * process's), and SECRETS_KEY and CURSOR_SECRET from the environment, so that no process falls
 * back to a key file of its own machine, nor one of them to a cursor secret the others do not use.
 */
function scaleOutFrom(env: NodeJS.ProcessEnv): boolean {
  const value = env.SCALE_OUT?.trim().toLowerCase();
  if (value === undefined || value === "" || value === "false") return false;
  if (value !== "true") throw new Error(`SCALE_OUT must be true or false, got ${JSON.stringify(env.SCALE_OUT)}.`);
  if (!env.DATABASE_URL || !isPostgresUrl(env.DATABASE_URL))
    throw new Error(
      "SCALE_OUT=true needs DATABASE_URL=postgres://…: an embedded PGlite database belongs to one process (docs/scale-out.md).",
    );
  const missing = (["SECRETS_KEY", "CURSOR_SECRET"] as const).filter((name) => !env[name]);
  if (missing.length > 0)
    throw new Error(
      `SCALE_OUT=true needs ${missing.join(" and ")} set, the same in every process: generated per process, they would not open each other's secrets and cursors (docs/scale-out.md).`,
    );
  return true;
}

export function readNodeConfig(env: NodeJS.ProcessEnv = process.env): NodeConfig {
  const port = Number(env.PORT ?? 8787);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`PORT must be a port number, got ${env.PORT}.`);
  if (env.CURSOR_SECRET !== undefined && env.CURSOR_SECRET.length < 16)
    throw new Error("CURSOR_SECRET must be at least 16 characters long.");
  // Lengths only: the keys themselves never appear in a message.
  if (env.SECRETS_KEY && env.SECRETS_KEY.length < MIN_SECRETS_KEY_LENGTH)
    throw new Error(`SECRETS_KEY must be at least ${MIN_SECRETS_KEY_LENGTH} characters long (docs/secrets.md).`);
  const secretsKeyPrevious = parseKeyList(env.SECRETS_KEY_PREVIOUS);
  // Checked now so a typo fails the start, not the first e-mail (the message never repeats the URL).
  if (env.SMTP_URL) parseSmtpUrl(env.SMTP_URL);
  if (secretsKeyPrevious.some((key) => key.length < MIN_SECRETS_KEY_LENGTH))
    throw new Error(`Every key of SECRETS_KEY_PREVIOUS must be at least ${MIN_SECRETS_KEY_LENGTH} characters long.`);
  // Parsed now, like SMTP_URL: a malformed host or cap fails the start.
  const outbound = outboundPolicyFrom(env);
  const quotas = quotasFrom(env);
  const signUp = signUpModeFrom(env.SIGN_UP);
  const trustedProxies = parseTrustedProxies(env.TRUSTED_PROXIES);
  const runQuietPeriodMs = runQuietPeriodMsFrom(env.RUN_QUIET_PERIOD_SECONDS);
  const scaleOut = scaleOutFrom(env);
  const retention = retentionFrom(env);
  return {
    port,
    host: env.HOST || undefined,
    databaseUrl: env.DATABASE_URL || undefined,
    adminToken: env.ADMIN_TOKEN || undefined,
    cursorSecret: env.CURSOR_SECRET || undefined,
    publicBaseUrl: env.PUBLIC_BASE_URL ? configuredBaseUrl(env.PUBLIC_BASE_URL, "PUBLIC_BASE_URL") : undefined,
    webAppUrl: env.WEB_APP_URL ? configuredBaseUrl(env.WEB_APP_URL, "WEB_APP_URL") : undefined,
    secretsKey: env.SECRETS_KEY || undefined,
    secretsKeyPrevious,
    seedDemo: env.SEED_DEMO !== "false",
    smtpUrl: env.SMTP_URL || undefined,
    mailFrom: env.MAIL_FROM || undefined,
    outbound,
    quotas,
    signUp,
    trustedProxies,
    runQuietPeriodMs,
    scaleOut,
    retention,
  };
}

/**
 * The public base URL and the web app's, once the port is known (PORT=0 picks one when
 * listening): PUBLIC_BASE_URL, else `http://localhost:<port>`; WEB_APP_URL, else the public base.
 */
export function publicUrls(
  config: Pick<NodeConfig, "publicBaseUrl" | "webAppUrl">,
  port: number,
): { publicBaseUrl: string; webAppUrl: string } {
  const publicBaseUrl = config.publicBaseUrl ?? `http://localhost:${port}`;
  return { publicBaseUrl, webAppUrl: config.webAppUrl ?? publicBaseUrl };
}
