/**
 * The uploader's exit codes, and the error that means exit 2. Documented in --help and in
 * docs/uploader-cli.md ("Exit codes").
 */
export const EXIT_OK = 0;
/**
 * With --fail-on-upload-error: the upload failed after retries (network, 5xx, 429) or --wait
 * timed out. Without it, those are warnings and the exit code stays 0 (an analytics outage must
 * not turn a build red).
 */
export const EXIT_UPLOAD_FAILED = 1;
/** --quarantine: a failed or errored test is not quarantined, or a report could not be read. */
export const EXIT_TESTS_FAILED = 1;
/** Usage error: bad flags, missing url/token, no files, unreadable file, request too large. */
export const EXIT_USAGE = 2;
/** Rejected by the server (400/413/415/422 and other 4xx; 401/403 with --fail-on-upload-error). */
export const EXIT_REJECTED = 3;
/** The run was processed as failed (--wait). */
export const EXIT_RUN_FAILED = 4;

/** A problem with the invocation or the inputs: exit 2. */
export class UsageError extends Error {
  override name = "UsageError";
}
