import createOpenApiFetchClient from "openapi-fetch";
import { ApiError, retryAfterSeconds } from "./errors.js";
const RETRYABLE_STATUSES = new Set([429, 503]);
/** The service's origin (and path prefix, if any) without `/api/v1` or a trailing slash. */
function serviceBase(baseUrl) {
    return baseUrl.replace(/\/+$/, "").replace(/\/api\/v1$/, "");
}
/** Throws ApiError for every answer outside 2xx, its body parsed when it is JSON. */
const throwOnError = {
    async onResponse({ response }) {
        if (response.ok)
            return undefined;
        const text = await response.clone().text();
        let body = undefined;
        try {
            body = text ? JSON.parse(text) : undefined;
        }
        catch {
            // Not JSON: a proxy's page, say. ApiError says so.
        }
        throw new ApiError(response, body);
    },
};
function retryingFetch(fetchOnce, policy) {
    const maxRetries = policy.maxRetries ?? 3;
    const maxDelayMs = policy.maxDelayMs ?? 60_000;
    return async (request) => {
        for (let attempt = 0;; attempt++) {
            // A request's body can be read once: every attempt but the last sends a copy.
            const response = await fetchOnce(attempt < maxRetries ? request.clone() : request);
            if (!RETRYABLE_STATUSES.has(response.status) || attempt >= maxRetries)
                return response;
            const retryAfter = retryAfterSeconds(response.headers.get("retry-after"));
            const delayMs = retryAfter !== null ? retryAfter * 1000 : 1000 * 2 ** attempt;
            if (delayMs > maxDelayMs)
                return response;
            await response.body?.cancel();
            await new Promise((resolve) => setTimeout(resolve, delayMs));
        }
    };
}
function createTypedClient(baseUrl, token, options) {
    // Looked up at call time, so that a fetch replaced later (tests, instrumentation) is used.
    const fetchOnce = options.fetch ?? ((request) => globalThis.fetch(request));
    const policy = options.retry === true ? {} : options.retry || null;
    const client = createOpenApiFetchClient({
        baseUrl,
        fetch: policy ? retryingFetch(fetchOnce, policy) : fetchOnce,
        headers: { ...options.headers, Authorization: `Bearer ${token}` },
    });
    client.use(throwOnError);
    // Same object: only the types change (a call that returns has a 2xx answer).
    return client;
}
/** A client of /api/v1, authenticated with the organization's API key. */
export function createClient(options) {
    return createTypedClient(`${serviceBase(options.baseUrl)}/api/v1`, options.apiKey, options);
}
/** A client of the upload interface (`/uploads/v1/…`), authenticated with a project's upload token. */
export function createUploadClient(options) {
    return createTypedClient(serviceBase(options.baseUrl), options.uploadToken, options);
}
