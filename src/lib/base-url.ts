/**
 * Base URLs from configuration (PUBLIC_BASE_URL, WEB_APP_URL). Absolute URLs the service hands
 * out are built from these, never from a request's Host header, which the client controls.
 */

/** `value` as a base URL: absolute http or https, no credentials, query or fragment, no trailing slash. */
export function configuredBaseUrl(value: string, setting: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new Error(`${setting} must be an absolute http or https URL, got ${JSON.stringify(value)}.`);
  }
  if ((url.protocol !== "http:" && url.protocol !== "https:") || url.username || url.password || url.search || url.hash) {
    throw new Error(`${setting} must be an http or https URL without credentials, query or fragment, got ${JSON.stringify(value)}.`);
  }
  return url.href.replace(/\/+$/, "");
}
