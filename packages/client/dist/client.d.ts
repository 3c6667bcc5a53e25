import { type Client, type FetchResponse, type MaybeOptionalInit } from "openapi-fetch";
import type { paths } from "./schema.js";
type HttpMethod = "get" | "put" | "post" | "delete" | "options" | "head" | "patch" | "trace";
/** The paths of `Paths` that have `Method`. */
export type PathsWithMethod<Paths, Method extends HttpMethod> = {
    [P in keyof Paths]: Paths[P] extends {
        [M in Method]: unknown;
    } ? P : never;
}[keyof Paths];
type RequiredKeysOf<T> = {
    [K in keyof T]-?: object extends Pick<T, K> ? never : K;
}[keyof T];
/** The init argument: required when the operation has required parameters or a required body. */
type InitParam<Init> = RequiredKeysOf<Init> extends never ? [(Init & {
    [key: string]: unknown;
})?] : [Init & {
    [key: string]: unknown;
}];
/** What a call resolves to: openapi-fetch's answer without its error branch, since errors are thrown. */
export type Success<Answer> = Exclude<Answer, {
    error: unknown;
}>;
/** The operation at `Path` for `Method` (openapi-fetch's own helpers, written for one method). */
type Operation<Paths, Path, Method extends HttpMethod> = Path extends keyof Paths ? Paths[Path] extends {
    [K in Method]: infer Op extends Record<string | number, unknown>;
} ? Op : never : never;
type ThrowingMethod<Paths, Method extends HttpMethod> = <Path extends PathsWithMethod<Paths, Method>, Init extends MaybeOptionalInit<{
    [K in Method]: Operation<Paths, Path, Method>;
}, Method>>(url: Path, ...init: InitParam<Init>) => Promise<Success<FetchResponse<Operation<Paths, Path, Method>, Init, `${string}/${string}`>>>;
/**
 * An openapi-fetch client whose calls resolve only on 2xx (`{ data, response }`, `data` typed by the
 * operation) and throw `ApiError` otherwise.
 */
export type TypedClient<Paths extends object> = Pick<Client<Paths>, "use" | "eject"> & {
    GET: ThrowingMethod<Paths, "get">;
    POST: ThrowingMethod<Paths, "post">;
    PUT: ThrowingMethod<Paths, "put">;
    PATCH: ThrowingMethod<Paths, "patch">;
    DELETE: ThrowingMethod<Paths, "delete">;
};
/** /api/v1's operations (the organization API key). */
export type ApiPaths = {
    [P in keyof paths as P extends `/uploads/v1/${string}` ? never : P]: paths[P];
};
/** The upload interface's operations, under their full paths (`/uploads/v1/…`; a project's upload token). */
export type UploadPaths = {
    [P in keyof paths as P extends `/uploads/v1/${string}` ? P : never]: paths[P];
};
export type ApiClient = TypedClient<ApiPaths>;
export type UploadClient = TypedClient<UploadPaths>;
/**
 * Retries of 429 (rate limited) and 503 (service unavailable) answers, waiting what their
 * `Retry-After` says (else 1 s, doubling). Off unless given.
 */
export type RetryPolicy = {
    /** How many times one call is retried (default 3). */
    maxRetries?: number;
    /** The longest wait before one retry; an answer asking for longer is thrown at once (default 60,000 ms). */
    maxDelayMs?: number;
};
type CommonOptions = {
    /** Where the service is, e.g. `https://analytics.example.com` (a trailing `/api/v1` is accepted). */
    baseUrl: string;
    /** Replaces the global fetch (tests, proxies, instrumentation). */
    fetch?: (request: Request) => Promise<Response>;
    /** Retry 429 and 503 answers (see RetryPolicy); `true` for the defaults. */
    retry?: RetryPolicy | boolean;
    /** Extra headers on every request (a User-Agent, say). */
    headers?: Record<string, string>;
};
export type CreateClientOptions = CommonOptions & {
    /** The organization's API key (`cta_…`), sent as `Authorization: Bearer`. */
    apiKey: string;
};
export type CreateUploadClientOptions = CommonOptions & {
    /** The project's upload token, sent as `Authorization: Bearer`. */
    uploadToken: string;
};
/** A client of /api/v1, authenticated with the organization's API key. */
export declare function createClient(options: CreateClientOptions): ApiClient;
/** A client of the upload interface (`/uploads/v1/…`), authenticated with a project's upload token. */
export declare function createUploadClient(options: CreateUploadClientOptions): UploadClient;
export {};
