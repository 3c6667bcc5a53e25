/**
 * The uploader's exit codes, and the error that means exit 2. Documented in --help and in
 * docs/uploader-cli.md.
 */
export const EXIT_OK = 0;
/** The upload failed after retries (network, 5xx, 429), or --wait timed out. */
export const EXIT_UPLOAD_FAILED = 1;
/** Usage error: bad flags, missing url/token, no files, unreadable file, request too large. */
export const EXIT_USAGE = 2;
/** Rejected by the server (400/401/413/415/422 and other 4xx). */
export const EXIT_REJECTED = 3;
/** The run was processed as failed (--wait). */
export const EXIT_RUN_FAILED = 4;

/** A problem with the invocation or the inputs: exit 2. */
export class UsageError extends Error {
  override name = "UsageError";
}
