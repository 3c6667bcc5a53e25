/**
 * One list definition: the cursor binding, the keyset condition and the page all follow from it,
 * and the filters the service reads are the filters the cursor is bound to.
 */
import { PgDialect } from "drizzle-orm/pg-core";
import { describe, expect, it } from "vitest";
import { alerts, testCases } from "../../src/db/schema";
import { type ListRequest, defineList, pageBody, readListRequest } from "../../src/lib/lists";
import { CursorCodec } from "../../src/lib/pagination";

const ORG = "0b6a9f4e-1111-4111-8111-111111111111";
const codec = new CursorCodec("lists-test-secret-0123456789");
const dialect = new PgDialect();

type Filters = { status: string; project_id: string | null };
type Row = { id: string; createdAt: Date; name: string };
const list = defineList<Filters, Row, { name: string; url: string }, string>({
  name: "things",
  order: { ts: alerts.createdAt, id: alerts.id, idKind: "uuid" },
  positionOf: (row) => ({ ts: row.createdAt, id: row.id }),
  present: (row, base) => ({ name: row.name, url: `${base}/${row.id}` }),
});
const byId = defineList<{ run: string }, { id: number }, number>({
  name: "by_id",
  order: { id: testCases.id, idKind: "bigint" },
  positionOf: (row) => ({ id: row.id }),
  present: (row) => row.id,
});

const rows = (n: number): Row[] =>
  Array.from({ length: n }, (_, i) => ({
    id: `0b6a9f4e-2222-4222-8222-${String(100 - i).padStart(12, "0")}`,
    createdAt: new Date(Date.UTC(2026, 0, 1, 0, 0, 100 - i)),
    name: `n${i}`,
  }));

describe("defineList", () => {
  it("binds its cursors to the organization and every filter of the request", () => {
    const first = readListRequest(codec, list, { organizationId: ORG, filters: { status: "active", project_id: null } }, { limit: "2" });
    expect(first).toEqual({ organizationId: ORG, filters: { status: "active", project_id: null }, limit: 2, after: null });
    const body = pageBody(codec, list, first, list.page(rows(3), first, "https://app"));
    expect(body.data).toEqual([
      { name: "n0", url: `https://app/${rows(1)[0]!.id}` },
      { name: "n1", url: `https://app/${rows(2)[1]!.id}` },
    ]);
    expect(body.pagination.has_more).toBe(true);
    const cursor = body.pagination.next_cursor!;

    const next = readListRequest(codec, list, { organizationId: ORG, filters: { status: "active", project_id: null } }, { cursor });
    expect(next.after).toEqual({ ts: rows(2)[1]!.createdAt, id: rows(2)[1]!.id });
    for (const filters of [
      { status: "all", project_id: null },
      { status: "active", project_id: "0b6a9f4e-3333-4333-8333-333333333333" },
    ]) {
      expect(() => readListRequest(codec, list, { organizationId: ORG, filters }, { cursor })).toThrow(/cursor is invalid/);
    }
    expect(() =>
      readListRequest(codec, list, { organizationId: "0b6a9f4e-4444-4444-8444-444444444444", filters: next.filters }, { cursor }),
    ).toThrow(/cursor is invalid/);
    expect(() => readListRequest(codec, byId, { organizationId: ORG, filters: { run: "1" } }, { cursor })).toThrow(/cursor is invalid/);
  });

  it("derives the keyset condition and the order from its order columns", () => {
    const request: ListRequest<Filters> = { organizationId: ORG, filters: { status: "all", project_id: null }, limit: 25, after: null };
    expect(list.after(request)).toBeUndefined();
    expect(list.fetchLimit(request)).toBe(26);
    const after = list.after({ ...request, after: { ts: new Date(Date.UTC(2026, 0, 1)), id: rows(1)[0]!.id } })!;
    expect(dialect.sqlToQuery(after).sql).toBe('("alerts"."created_at", "alerts"."id") < ($1::timestamptz, $2::uuid)');
    expect(list.orderBy.map((part) => dialect.sqlToQuery(part).sql)).toEqual(['"alerts"."created_at" desc', '"alerts"."id" desc']);

    const idRequest: ListRequest<{ run: string }> = {
      organizationId: ORG,
      filters: { run: "3" },
      limit: 1,
      after: { ts: new Date(0), id: 42 },
    };
    expect(dialect.sqlToQuery(byId.after(idRequest)!).sql).toBe('"test_cases"."id" < $1');
    expect(byId.orderBy.map((part) => dialect.sqlToQuery(part).sql)).toEqual(['"test_cases"."id" desc']);
    const page = byId.page([{ id: 9 }, { id: 8 }], idRequest);
    expect(page).toEqual({ items: [9], next: { ts: new Date(0), id: 9 } });
  });

  it("a bad limit is a 400 before the cursor is read", () => {
    expect(() =>
      readListRequest(codec, list, { organizationId: ORG, filters: { status: "all", project_id: null } }, { limit: "0", cursor: "junk" }),
    ).toThrow(/limit must be an integer/);
  });
});
