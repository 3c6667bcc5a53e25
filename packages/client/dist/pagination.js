/**
 * Every item of a list, page after page: the first request as given (filters, `limit`), then each
 * next one with `cursor` set to the previous page's `pagination.next_cursor`, until it is null.
 * Pages are fetched as the loop asks for them: leaving the loop early fetches nothing more. An
 * error answer is thrown as ApiError from the loop.
 *
 *     for await (const test of paginate(api, "/projects/{id}/tests", { params: { path: { id }, query: { health: "flaky" } } })) { … }
 */
export async function* paginate(client, path, ...init) {
    const loose = client;
    const first = (init[0] ?? {});
    let cursor = undefined;
    do {
        const query = { ...first.params?.query };
        if (cursor)
            query.cursor = cursor;
        const { data } = await loose.GET(path, { ...first, params: { ...first.params, query } });
        for (const item of data.data)
            yield item;
        cursor = data.pagination.next_cursor;
    } while (cursor);
}
