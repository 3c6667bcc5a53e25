/** Secrets and addresses the test suites share (no imports: the workerd vitest config loads this file). */
export const ADMIN_TOKEN = "test-admin-token-0123456789";
export const WEB_APP_URL = "https://app.example.test";
/** The configured public base URL: every absolute URL of the API starts with it, whatever Host a request names. */
export const PUBLIC_BASE_URL = "https://api.ci-analytics.test";
export const CURSOR_SECRET = "test-cursor-secret-0123456789";
export const SECRETS_KEY = "test-secrets-key-0123456789abcdefghijklmnop";
