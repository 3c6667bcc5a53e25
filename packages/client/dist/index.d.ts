/**
 * The typed client of the CI test analytics API: `createClient` for /api/v1 (the organization's
 * API key), `createUploadClient` for the upload interface (a project's upload token), `paginate`
 * over any list, and `ApiError` for every non-2xx answer. The types come from the service's OpenAPI
 * document (src/schema.ts, generated).
 */
export { createClient, createUploadClient } from "./client.js";
export type { ApiClient, ApiPaths, CreateClientOptions, CreateUploadClientOptions, RetryPolicy, Success, TypedClient, UploadClient, UploadPaths, } from "./client.js";
export { ApiError, retryAfterSeconds } from "./errors.js";
export type { ApiErrorCode, ApiErrorDetail, ErrorEnvelope } from "./errors.js";
export { paginate } from "./pagination.js";
export type { ListItem, ListPage, ListPath } from "./pagination.js";
export type { components, operations, paths } from "./schema.js";
import type { components } from "./schema.js";
/** The API's objects by name (`Schemas["Project"]`, `Schemas["Test"]`…). */
export type Schemas = components["schemas"];
