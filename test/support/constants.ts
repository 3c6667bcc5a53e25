/** Secrets and addresses the test suites share (no imports: the workerd vitest config loads this file). */
export const ADMIN_TOKEN = "test-admin-token-0123456789";
export const WEB_APP_URL = "https://app.example.test";
export const CURSOR_SECRET = "test-cursor-secret-0123456789";
