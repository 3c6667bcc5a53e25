/**
 * Sending e-mail, as both runtimes see it (docs/e-mail.md): one interface, an SMTP transport per
 * runtime (nodemailer on Node, src/node/smtp-transport.ts; SMTP over TCP sockets on the Worker,
 * src/worker/smtp-transport.ts), both configured by the same `SMTP_URL`. Without a transport the
 * outbox keeps every message for the operator (src/services/shared/email-outbox.ts).
 */

/**
 * One message: the text, and optionally an HTML alternative and extra headers (the digest's
 * `List-Unsubscribe`). The transports' libraries build the MIME (multipart/alternative, header
 * encoding): nothing here writes it by hand.
 */
type OutgoingEmail = { from: string; to: string; subject: string; text: string; html?: string; headers?: Record<string, string> };

export interface MailTransport {
  /** Sends one message; resolves once the SMTP server accepted it, throws otherwise. */
  send(message: OutgoingEmail): Promise<void>;
}

/** What background work needs to send the outbox's mail. */
export type MailSettings = {
  /** Null: nothing is sent; messages are held in the outbox for the operator. */
  transport: MailTransport | null;
  /** The From header (MAIL_FROM). */
  from: string;
  /**
   * Log a held message's text (its links included) so the operator of a local run can follow an
   * invitation without SMTP. Only when the web app is served on a loopback address over http:
   * anywhere else an invitation's link is a secret that must not reach a log.
   */
  logHeldBodies: boolean;
};

export type SmtpSettings = { host: string; port: number; secure: boolean; username?: string; password?: string };

/**
 * SMTP_URL: `smtp://user:password@host:587` (STARTTLS when the server offers it) or
 * `smtps://user:password@host:465` (TLS from the start). User and password are percent-decoded.
 * The message of an error never repeats the URL (it holds a password).
 */
export function parseSmtpUrl(text: string): SmtpSettings {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new Error("SMTP_URL must be a URL such as smtp://user:password@smtp.example.com:587.");
  }
  if (url.protocol !== "smtp:" && url.protocol !== "smtps:") throw new Error("SMTP_URL must start with smtp:// or smtps://.");
  if (!url.hostname) throw new Error("SMTP_URL must name a host.");
  const secure = url.protocol === "smtps:";
  return {
    host: url.hostname.replace(/^\[|\]$/g, ""),
    port: url.port ? Number(url.port) : secure ? 465 : 587,
    secure,
    ...(url.username ? { username: decodeURIComponent(url.username), password: decodeURIComponent(url.password) } : {}),
  };
}

/** MAIL_FROM, else `CI test analytics <no-reply@<the web app's host>>`. */
export function mailFromAddress(configured: string | undefined, webAppUrl: string): string {
  if (configured && configured.trim() !== "") {
    if (/[\r\n]/.test(configured)) throw new Error("MAIL_FROM must be one line.");
    return configured.trim();
  }
  return `CI test analytics <no-reply@${new URL(webAppUrl).hostname}>`;
}

/** Whether the web app is served over http on a loopback host (a local run: `npm start`). */
export function isLocalWebApp(webAppUrl: string): boolean {
  const url = new URL(webAppUrl);
  return url.protocol === "http:" && ["localhost", "127.0.0.1", "[::1]"].includes(url.hostname);
}
