/**
 * BEGIN and COMMIT folded into a transaction's first and last statements
 * (src/db/transaction-boundaries.ts): parameters written as literals that Postgres reads back
 * exactly whatever the text holds (quotes, backslashes, `$$`, `;commit;`, comments), or left as
 * parameters when they cannot be; and what a folding client sends for the calls Drizzle's
 * transactions make, checked against a recording stand-in of a node-postgres client. The real
 * clients are exercised by transaction-boundaries.postgres.test.ts, the services' tests on
 * Postgres and the Worker's tests.
 */
import { type SQL, sql } from "drizzle-orm";
import { PgDialect } from "drizzle-orm/pg-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rowsOf } from "../../src/db/rows";
import { COMMIT_AFTER, foldTransactionBoundaries, inlineLiteral, inlined, lastStatement } from "../../src/db/transaction-boundaries";
import type { OpenedDatabase } from "../../src/node/database";
import { AWKWARD } from "../support/awkward-text";
import { openTestDatabase } from "../support/harness";

const plain = new PgDialect();
const render = (statement: SQL) => plain.sqlToQuery(statement);

describe("inlineLiteral", () => {
  it("quotes every value as an escape string, doubling backslashes and quotes", () => {
    expect(inlineLiteral("it's")).toBe("E'it''s'");
    expect(inlineLiteral("a\\b")).toBe("E'a\\\\b'");
    expect(inlineLiteral("\\'")).toBe("E'\\\\'''");
    expect(inlineLiteral(42)).toBe("E'42'");
    expect(inlineLiteral(-5)).toBe("E'-5'");
    expect(inlineLiteral(1.5)).toBe("E'1.5'");
    expect(inlineLiteral(12n)).toBe("E'12'");
    expect(inlineLiteral(true)).toBe("E'true'");
    expect(inlineLiteral(null)).toBe("null");
    expect(inlineLiteral(undefined)).toBe("null");
  });

  it("refuses what it cannot write safely: NUL, non-finite numbers, dates, arrays, objects", () => {
    for (const value of ["a\0b", Number.NaN, Number.POSITIVE_INFINITY, new Date(0), [1, 2], { a: 1 }, Buffer.from("x")]) {
      expect(() => inlineLiteral(value)).toThrow();
    }
  });
});

describe("inlined and lastStatement", () => {
  const tx = { nestedIndex: 0 };

  it("write the parameters in place; lastStatement marks the statement", () => {
    const statement = sql`select ${1}::int as a, ${"x'y"}::text as b`;
    expect(render(inlined(statement))).toEqual({ sql: "select E'1'::int as a, E'x''y'::text as b", params: [] });
    expect(render(lastStatement(tx, statement))).toEqual({ sql: `${COMMIT_AFTER}select E'1'::int as a, E'x''y'::text as b`, params: [] });
  });

  it("leave a statement with a value they cannot inline as it is (parameters, no mark)", () => {
    const statement = sql`select ${"a\0b"}::text, ${1}::int`;
    expect(inlined(statement)).toBe(statement);
    expect(lastStatement(tx, statement)).toBe(statement);
    expect(render(lastStatement(tx, statement)).params).toEqual(["a\0b", 1]);
  });

  it("lastStatement leaves a nested transaction's statement unmarked: the savepoint's owner commits", () => {
    const statement = sql`select ${1}::int`;
    expect(render(lastStatement({ nestedIndex: 1 }, statement))).toMatchObject({ sql: "select $1::int", params: [1] });
  });
});

describe("inlined values read back by the database", () => {
  let database: OpenedDatabase;
  beforeAll(async () => {
    database = await openTestDatabase();
  });
  afterAll(() => database.close());

  for (const conforming of ["on", "off"]) {
    it(`are the values themselves, with standard_conforming_strings ${conforming}`, async () => {
      const read = await database.db.transaction(async (tx) => {
        await tx.execute(sql.raw(`set local standard_conforming_strings = ${conforming}`));
        const columns = AWKWARD.map((text, i) => sql`${text}::text as ${sql.identifier(`t${i}`)}`);
        const [row] = await rowsOf<Record<string, string>>(
          tx.execute(
            inlined(
              sql`select ${sql.join(columns, sql`, `)}, ${-5}::int - ${-3}::int as d, ${2.5}::float8 as f, ${true}::boolean as b, ${null}::text as n`,
            ),
          ),
        );
        return row!;
      });
      expect(AWKWARD.map((_, i) => read[`t${i}`])).toEqual(AWKWARD);
      expect([read.d, read.f, read.b, read.n]).toEqual([-2, 2.5, true, null]);
    });
  }

  it("inside JSON text, as the services pass rows", async () => {
    const rows = AWKWARD.map((name, i) => ({ i, name }));
    const read = await rowsOf<{ i: number; name: string }>(
      database.db.execute(
        inlined(sql`select x.i, x.name from json_to_recordset(${JSON.stringify(rows)}::json) as x(i int, name text) order by x.i`),
      ),
    );
    expect(read).toEqual(rows);
  });
});

type Sent = { text: string; values?: unknown[] };

/**
 * A stand-in for a node-postgres client: records each message's text and answers each of its
 * statements (split where the folding puts its `;`) with the statement's command, as pg does:
 * one result, or an array of them for several. `fail` makes a message with that text fail.
 */
function recordingClient(fail?: RegExp) {
  const sent: Sent[] = [];
  const client = {
    query(
      config: string | { text: string; values?: unknown[] },
      values?: unknown[] | ((error: Error | null) => void),
      callback?: (error: Error | null) => void,
    ) {
      const text = typeof config === "string" ? config : config.text;
      sent.push({ text, ...(Array.isArray(values) ? { values } : {}) });
      const done = typeof values === "function" ? values : callback;
      const statements = text.split(/\n?;\n/);
      const results = statements.map((s) => ({
        command: s
          .replace(/^\/\*.*?\*\/\s*/, "")
          .split(/\s/)[0]!
          .toUpperCase(),
        rows: [{ s }],
        rowCount: 1,
        fields: [],
      }));
      const error = fail?.test(text) ? new Error("the statement failed") : null;
      if (done) {
        done(error);
        return undefined;
      }
      return error ? Promise.reject(error) : Promise.resolve(results.length === 1 ? results[0] : results);
    },
  };
  foldTransactionBoundaries(client);
  return { client, sent };
}

describe("foldTransactionBoundaries", () => {
  it("sends BEGIN with the first statement and COMMIT with a marked last one, and answers the owner's COMMIT itself", async () => {
    const { client, sent } = recordingClient();
    expect(await client.query({ text: "begin " }, [])).toMatchObject({ command: "BEGIN" });
    const first = (await client.query({ text: "select 1" }, [])) as { rows: { s: string }[] };
    expect(first.rows).toEqual([{ s: "select 1" }]);
    await client.query({ text: "insert $1" }, ["x"]);
    const last = (await client.query({ text: `${COMMIT_AFTER}update 2` }, [])) as { rows: { s: string }[] };
    expect(last.rows).toEqual([{ s: `${COMMIT_AFTER}update 2` }]);
    expect(await client.query({ text: "commit" }, [])).toMatchObject({ command: "COMMIT" });
    expect(sent).toEqual([
      { text: "begin;\nselect 1", values: [] },
      { text: "insert $1", values: ["x"] },
      { text: `${COMMIT_AFTER}update 2\n;\ncommit`, values: [] },
    ]);
  });

  it("hands back every result of a first statement whose text holds several (as a migration's may)", async () => {
    const { client, sent } = recordingClient();
    await client.query("begin");
    const answer = (await client.query({ text: "create table a (x int);\ncreate index on a (x)" }, [])) as { command: string }[];
    expect(answer.map((result) => result.command)).toEqual(["CREATE", "CREATE"]);
    expect(sent.map((s) => s.text)).toEqual(["begin;\ncreate table a (x int);\ncreate index on a (x)"]);
  });

  it("sends BEGIN on its own before a first statement with parameters", async () => {
    const { client, sent } = recordingClient();
    await client.query("begin");
    await client.query({ text: "select $1" }, [1]);
    await client.query({ text: "commit" }, []);
    expect(sent.map((s) => s.text)).toEqual(["begin", "select $1", "commit"]);
  });

  it("a marked statement that fails commits nothing: the owner's ROLLBACK is sent", async () => {
    const { client, sent } = recordingClient(/update/);
    await client.query("begin");
    await client.query({ text: "select 1" }, []);
    await expect(client.query({ text: `${COMMIT_AFTER}update 2` }, [])).rejects.toThrow("the statement failed");
    await client.query({ text: "rollback" }, []);
    expect(sent.map((s) => s.text)).toEqual(["begin;\nselect 1", `${COMMIT_AFTER}update 2\n;\ncommit`, "rollback"]);
  });

  it("a transaction that sent nothing sends nothing, committed or rolled back", async () => {
    const { client, sent } = recordingClient();
    await client.query("begin");
    await client.query("commit");
    await client.query("begin");
    await client.query("rollback");
    expect(sent).toEqual([]);
  });

  it("a marked statement outside a transaction it began is sent as it is (no COMMIT)", async () => {
    const { client, sent } = recordingClient();
    await client.query({ text: `${COMMIT_AFTER}select 1` }, []);
    expect(sent.map((s) => s.text)).toEqual([`${COMMIT_AFTER}select 1`]);
  });

  it("a callback-style query after a held-back BEGIN goes after it, unchanged", async () => {
    const { client, sent } = recordingClient();
    await client.query("begin");
    await new Promise<void>((resolve, reject) => client.query("select 1", [], (error) => (error ? reject(error) : resolve())));
    expect(sent.map((s) => s.text)).toEqual(["begin", "select 1"]);
  });

  it("an answer that does not end with COMMIT is an error, and the owner's COMMIT is then sent", async () => {
    const sent: string[] = [];
    const client = {
      query(config: { text: string }) {
        sent.push(config.text);
        return Promise.resolve([
          { command: "UPDATE", rows: [], rowCount: 1, fields: [] },
          { command: "ROLLBACK", rows: [], rowCount: null, fields: [] },
        ]);
      },
    };
    foldTransactionBoundaries(client);
    await client.query({ text: "begin" });
    await client.query({ text: "select 1" }).catch(() => undefined);
    await expect(client.query({ text: `${COMMIT_AFTER}update 2` })).rejects.toThrow(/COMMIT/);
    await client.query({ text: "commit" });
    expect(sent.at(-1)).toBe("commit");
  });
});
