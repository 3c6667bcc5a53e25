/**
 * The e-mail transport on Node: SMTP through nodemailer (well kept, the usual choice on Node),
 * configured by SMTP_URL (docs/e-mail.md). One pooled-free transporter per process: each message
 * opens its own connection, which suits the outbox's trickle of mail.
 */
import { createTransport } from "nodemailer";
import { type MailTransport, type SmtpSettings, parseSmtpUrl } from "../mail/transport";

const TIMEOUT_MS = 15_000;

export function nodeSmtpTransport(smtpUrl: string): MailTransport {
  const settings: SmtpSettings = parseSmtpUrl(smtpUrl);
  const transporter = createTransport({
    host: settings.host,
    port: settings.port,
    secure: settings.secure,
    ...(settings.username !== undefined ? { auth: { user: settings.username, pass: settings.password ?? "" } } : {}),
    connectionTimeout: TIMEOUT_MS,
    greetingTimeout: TIMEOUT_MS,
    socketTimeout: TIMEOUT_MS,
    // Nothing of the conversation (addresses, bodies with links) goes to a log.
    logger: false,
    debug: false,
  });
  return {
    async send(message) {
      await transporter.sendMail({
        from: message.from,
        to: message.to,
        subject: message.subject,
        text: message.text,
        ...(message.html !== undefined ? { html: message.html } : {}),
        ...(message.headers !== undefined ? { headers: message.headers } : {}),
      });
    },
  };
}
