/**
 * A real SMTP server for the e-mail tests (the `smtp-server` package), listening on a free
 * loopback port: it accepts every message (with or without AUTH) and keeps what arrived, parsed
 * just enough to read the recipients, the subject and the text.
 */
import { SMTPServer } from "smtp-server";

export type ReceivedEmail = { from: string; to: string[]; subject: string; text: string; raw: string };

export class SmtpSink {
  readonly received: ReceivedEmail[] = [];
  readonly logins: { username: string; password: string }[] = [];
  #server: SMTPServer;
  #waiters: (() => void)[] = [];
  /** Reject every message with this reply (a server refusing mail), while set. */
  refuseWith: string | null = null;
  port = 0;

  constructor() {
    this.#server = new SMTPServer({
      secure: false,
      disabledCommands: ["STARTTLS"],
      authOptional: true,
      allowInsecureAuth: true,
      logger: false,
      onAuth: (auth, _session, callback) => {
        this.logins.push({ username: auth.username ?? "", password: auth.password ?? "" });
        callback(null, { user: auth.username });
      },
      onData: (stream, session, callback) => {
        const chunks: Buffer[] = [];
        stream.on("data", (chunk: Buffer) => chunks.push(chunk));
        stream.on("end", () => {
          if (this.refuseWith) return callback(Object.assign(new Error(this.refuseWith), { responseCode: 451 }));
          const raw = Buffer.concat(chunks).toString("utf8");
          this.received.push({
            from: session.envelope.mailFrom ? session.envelope.mailFrom.address : "",
            to: session.envelope.rcptTo.map((rcpt) => rcpt.address),
            subject: headerOf(raw, "subject"),
            text: bodyOf(raw),
            raw,
          });
          for (const wake of this.#waiters.splice(0)) wake();
          callback();
        });
      },
    });
  }

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.#server.listen(0, "127.0.0.1", resolve));
    this.port = (this.#server.server.address() as { port: number }).port;
    return `smtp://tester:secret@127.0.0.1:${this.port}`;
  }

  /** Resolves once `count` messages have arrived in all (or rejects after `timeoutMs`). */
  async waitFor(count: number, timeoutMs = 10_000): Promise<ReceivedEmail[]> {
    const deadline = Date.now() + timeoutMs;
    while (this.received.length < count) {
      if (Date.now() > deadline) throw new Error(`expected ${count} e-mails, got ${this.received.length}`);
      await new Promise<void>((resolve) => {
        this.#waiters.push(resolve);
        setTimeout(resolve, 100);
      });
    }
    return this.received;
  }

  to(address: string): ReceivedEmail[] {
    return this.received.filter((email) => email.to.includes(address));
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.#server.close(() => resolve()));
  }
}

/** A header's value: unfolded, RFC 2047 encoded words (`=?UTF-8?Q?…?=`, `=?UTF-8?B?…?=`) decoded. */
export function headerOf(raw: string, name: string): string {
  const head = raw.split(/\r?\n\r?\n/)[0] ?? "";
  const unfolded = head.replace(/\r?\n[ \t]+/g, " ");
  const line = unfolded.split(/\r?\n/).find((l) => l.toLowerCase().startsWith(`${name}:`));
  return line ? decodeWords(line.slice(name.length + 1).trim()) : "";
}

const ENCODED_WORD = /=\?[^?]+\?([QqBb])\?([^?]*)\?=/g;

/** A run of adjacent encoded words is one byte string (a character may span two words); the space between them is not text. */
function decodeWords(value: string): string {
  return value.replace(/=\?[^?]+\?[QqBb]\?[^?]*\?=(?:\s+=\?[^?]+\?[QqBb]\?[^?]*\?=)*/g, (run) => {
    const bytes = [...run.matchAll(ENCODED_WORD)].map(([, encoding, data]) =>
      encoding!.toUpperCase() === "B"
        ? Buffer.from(data!, "base64")
        : Buffer.from(
            data!.replace(/_/g, " ").replace(/=([0-9A-F]{2})/gi, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))),
            "latin1",
          ),
    );
    return Buffer.concat(bytes).toString("utf8");
  });
}

/** The text body, quoted-printable decoded when so encoded. */
function bodyOf(raw: string): string {
  const split = raw.search(/\r?\n\r?\n/);
  const head = raw.slice(0, split);
  let body = raw.slice(split).replace(/^\r?\n\r?\n/, "");
  if (/content-transfer-encoding:\s*quoted-printable/i.test(head)) {
    body = body.replace(/=\r?\n/g, "").replace(/=([0-9A-F]{2})/gi, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
    body = Buffer.from(body, "latin1").toString("utf8");
  } else if (/content-transfer-encoding:\s*base64/i.test(head)) {
    body = Buffer.from(body.replace(/\s+/g, ""), "base64").toString("utf8");
  }
  return body.replace(/\r\n/g, "\n");
}

/**
 * The decoded body of a message's part of this content type (`text/plain`, `text/html`) in a
 * multipart message (one level: multipart/alternative), or null when there is none.
 */
export function mimePart(raw: string, contentType: string): string | null {
  const boundary = /boundary="?([^";\r\n]+)"?/i.exec(raw.split(/\r?\n\r?\n/)[0]!.replace(/\r?\n[ \t]+/g, " "))?.[1];
  if (!boundary) return null;
  for (const part of raw.split(`--${boundary}`).slice(1)) {
    const head = part.replace(/^\r?\n/, "").split(/\r?\n\r?\n/)[0] ?? "";
    if (new RegExp(`content-type:\\s*${contentType}`, "i").test(head)) return bodyOf(part.replace(/^\r?\n/, "")).replace(/\n$/, "");
  }
  return null;
}
