/**
 * The uploader's output: results on stdout, everything else on stderr, every line scrubbed of
 * secrets, and a progress counter that keeps out of the way of the other lines.
 */
import { TOKEN_KINDS } from "../lib/keys";

export type Writable = { write(chunk: string): unknown; isTTY?: boolean };

/**
 * Anything shaped like one of our secrets (an upload token `ctu_…` or an API key `cta_…`, or at
 * least 16 characters of one) is masked in every line we print, token known or not.
 */
const SECRET_SHAPE = new RegExp(`\\b(?:${Object.values(TOKEN_KINDS).join("|")})_[0-9A-Za-z]{16,}`, "g");

/** `text` with every secret-shaped word cut to its prefix (`ctu_***`). */
export function maskSecretShapes(text: string): string {
  return text.replace(SECRET_SHAPE, (m) => `${m.slice(0, 4)}***`);
}

/**
 * Writes to stdout/stderr with every secret masked, and keeps a TTY progress line out of the way.
 */
export class Output {
  private readonly stdout: Writable;
  private readonly stderr: Writable;
  private readonly quiet: boolean;
  private readonly verbose: boolean;
  private readonly secrets: string[];
  private progressShown = false;

  private readonly annotations: boolean;

  /** @param options.annotations write GitHub Actions workflow commands (`::warning::`) for `annotate` */
  constructor(stdout: Writable, stderr: Writable, options: { quiet: boolean; verbose: boolean; secrets: string[]; annotations?: boolean }) {
    this.stdout = stdout;
    this.stderr = stderr;
    this.quiet = options.quiet;
    this.verbose = options.verbose;
    this.secrets = options.secrets.filter((s) => s.length >= 4);
    this.annotations = options.annotations ?? false;
  }

  /**
   * A GitHub Actions annotation (shown on the run's page), when running there; nothing otherwise.
   * The message is also printed as a warning or error by the caller: this only makes it visible.
   */
  annotate(level: "warning" | "error", title: string, message: string): void {
    if (!this.annotations) return;
    this.clearProgress();
    const data = (text: string) => text.replaceAll("%", "%25").replaceAll("\r", "%0D").replaceAll("\n", "%0A");
    const property = (text: string) => data(text).replaceAll(":", "%3A").replaceAll(",", "%2C");
    this.stdout.write(`::${level} title=${property(title)}::${data(this.redact(message))}\n`);
  }

  redact(text: string): string {
    let out = text;
    for (const secret of this.secrets) out = out.split(secret).join("***");
    return maskSecretShapes(out);
  }

  private clearProgress(): void {
    if (this.progressShown && this.stderr.isTTY) this.stderr.write("\r\x1b[K");
    this.progressShown = false;
  }

  /** Text for a command's stdout as it is (split's and failed's items: another command reads them). */
  raw(text: string): void {
    this.clearProgress();
    this.stdout.write(this.redact(text));
  }

  result(line: string): void {
    this.clearProgress();
    this.stdout.write(`${this.redact(line)}\n`);
  }

  error(line: string): void {
    this.clearProgress();
    this.stderr.write(`${this.redact(`error: ${line}`)}\n`);
  }

  warn(line: string): void {
    this.clearProgress();
    this.stderr.write(`${this.redact(`warning: ${line}`)}\n`);
  }

  info(line: string): void {
    if (this.quiet) return;
    this.clearProgress();
    this.stderr.write(`${this.redact(line)}\n`);
  }

  debug(line: string): void {
    if (!this.verbose) return;
    this.clearProgress();
    this.stderr.write(`${this.redact(`debug: ${line}`)}\n`);
  }

  /** A progress counter: rewritten in place on a TTY, one line per 10 % otherwise. */
  progress(label: string, total: number): { tick(): void } {
    let lastDecile = 0;
    let done = 0;
    const enabled = !this.quiet && total > 0;
    return {
      tick: () => {
        done += 1;
        if (!enabled) return;
        const percent = Math.floor((done / total) * 100);
        const text = `${label} ${done}/${total} (${percent}%)`;
        if (this.stderr.isTTY) {
          this.stderr.write(`\r\x1b[K${text}`);
          this.progressShown = true;
          if (done === total) this.clearProgress();
        } else {
          const decile = Math.floor((done * 10) / total);
          if (decile > lastDecile) {
            lastDecile = decile;
            this.stderr.write(`${text}\n`);
          }
        }
      },
    };
  }
}
