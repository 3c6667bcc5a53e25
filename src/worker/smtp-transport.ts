/**
 * The e-mail transport on the Worker: SMTP over Cloudflare's TCP sockets (`cloudflare:sockets`)
 * through worker-mailer, configured by the same SMTP_URL as on Node (docs/e-mail.md). Chosen over
 * Cloudflare's `send_email` binding, which delivers only to addresses verified in the account:
 * invitations go to anyone. Each message opens and closes its own connection: a socket cannot
 * outlive the queue batch that opened it.
 */
import { LogLevel, WorkerMailer } from "worker-mailer";
import { type MailTransport, parseSmtpUrl } from "../mail/transport";

const TIMEOUT_MS = 15_000;

export function workerSmtpTransport(smtpUrl: string): MailTransport {
  const settings = parseSmtpUrl(smtpUrl);
  return {
    async send(message) {
      await WorkerMailer.send(
        {
          host: settings.host,
          port: settings.port,
          secure: settings.secure,
          // STARTTLS when the server offers it, as nodemailer does on Node.
          startTls: !settings.secure,
          ...(settings.username !== undefined ? { credentials: { username: settings.username, password: settings.password ?? "" } } : {}),
          // Its own log would print the conversation; errors reach ours as exceptions.
          logLevel: LogLevel.NONE,
          socketTimeoutMs: TIMEOUT_MS,
          responseTimeoutMs: TIMEOUT_MS,
        },
        {
          from: message.from,
          to: message.to,
          subject: message.subject,
          text: message.text,
          ...(message.html !== undefined ? { html: message.html } : {}),
          ...(message.headers !== undefined ? { headers: message.headers } : {}),
        },
      );
    },
  };
}
