/**
 * The typed client of the CI test analytics API: `createClient` for /api/v1 (the organization's
 * API key), `createUploadClient` for the upload interface (a project's upload token), `paginate`
 * over any list, and `ApiError` for every non-2xx answer. The types come from the service's OpenAPI
 * document (src/schema.ts, generated).
 */
export { createClient, createUploadClient } from "./client.js";
export { ApiError, retryAfterSeconds } from "./errors.js";
export { paginate } from "./pagination.js";
