import type { FetchResponse, MaybeOptionalInit } from "openapi-fetch";
import type { ApiPaths, PathsWithMethod, Success, TypedClient } from "./client.js";
/** The shape of every list answer: a page of `data` and the cursor of the next one. */
export type ListPage<Item> = {
    data: Item[];
    pagination: {
        next_cursor: string | null;
        has_more: boolean;
    };
};
type GetOperation<Paths, Path> = Path extends keyof Paths ? Paths[Path] extends {
    get: infer Op extends Record<string | number, unknown>;
} ? Op : never : never;
type GetData<Paths, Path> = Success<FetchResponse<GetOperation<Paths, Path>, object, `${string}/${string}`>>["data"];
/** The GET paths of `Paths` that answer a list (`{ data, pagination }`). */
export type ListPath<Paths = ApiPaths> = {
    [P in PathsWithMethod<Paths, "get">]: GetData<Paths, P> extends ListPage<unknown> ? P : never;
}[PathsWithMethod<Paths, "get">];
/** One item of the list at `Path`. */
export type ListItem<Path extends ListPath<Paths>, Paths = ApiPaths> = GetData<Paths, Path> extends ListPage<infer Item> ? Item : never;
type ListInit<Paths, Path> = MaybeOptionalInit<{
    get: GetOperation<Paths, Path>;
}, "get">;
/**
 * Every item of a list, page after page: the first request as given (filters, `limit`), then each
 * next one with `cursor` set to the previous page's `pagination.next_cursor`, until it is null.
 * Pages are fetched as the loop asks for them: leaving the loop early fetches nothing more. An
 * error answer is thrown as ApiError from the loop.
 *
 *     for await (const test of paginate(api, "/projects/{id}/tests", { params: { path: { id }, query: { health: "flaky" } } })) { … }
 */
export declare function paginate<Paths extends object, Path extends ListPath<Paths>>(client: TypedClient<Paths>, path: Path, ...init: RequiredInit<ListInit<Paths, Path>>): AsyncGenerator<ListItem<Path, Paths>, void, undefined>;
type RequiredKeysOf<T> = {
    [K in keyof T]-?: object extends Pick<T, K> ? never : K;
}[keyof T];
type RequiredInit<Init> = RequiredKeysOf<Init> extends never ? [Init?] : [Init];
export {};
