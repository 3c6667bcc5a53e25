/**
 * COPY's text format as encodeCopyRow writes it, read back by Postgres itself where there is a
 * server (node-postgres registers COPY); PGlite runs check the encoding and that no COPY is offered.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql } from "drizzle-orm";
import { encodeCopyRow, openCopy } from "../../src/db/bulk-copy";
import type { OpenedDatabase } from "../../src/node/database";
import { openTestDatabase } from "../support/harness";

const AWKWARD = [
  "back\\slash",
  "tab\there",
  "new\nline",
  "carriage\rreturn",
  "\\N",
  "\\.",
  "ends with backslash\\",
  "quote ' and \" and ,comma",
  "unicode: żółć 😀 \u2028 \u00a0",
  "",
  "\\\\n literal",
];

describe("encodeCopyRow", () => {
  it("escapes backslash, tab, newline and carriage return; null is \\N; numbers are plain", () => {
    expect(encodeCopyRow(["a\\b", "c\td", "e\nf", "g\rh", null, 42, ""])).toBe("a\\\\b\tc\\td\te\\nf\tg\\rh\t\\N\t42\t\n");
  });

  it("leaves other text as it is, including a literal \\N text which it escapes so it is not NULL", () => {
    expect(encodeCopyRow(["plain ascii", "\\N"])).toBe("plain ascii\t\\\\N\n");
  });

  it("is stateless between calls (no regex lastIndex carried over)", () => {
    for (let i = 0; i < 5; i++) expect(encodeCopyRow(["x\ty", "x\ty"])).toBe("x\\ty\tx\\ty\n");
  });
});

describe("COPY through the database's driver", () => {
  let database: OpenedDatabase;
  beforeAll(async () => {
    database = await openTestDatabase();
  });
  afterAll(() => database.close());

  it("round-trips awkward text exactly where COPY is offered, and is absent on PGlite", async () => {
    const offered = await database.db.transaction(async (tx) => {
      await tx.execute(sql`create temporary table copy_probe (n int, t text, j jsonb) on commit drop`);
      const copy = openCopy(database.db, tx, "copy copy_probe (n, t, j) from stdin");
      if (!copy) return false;
      copy.write(AWKWARD.map((text, n) => encodeCopyRow([n, text, JSON.stringify({ text })])).join(""));
      copy.write(encodeCopyRow([AWKWARD.length, null, "[]"]));
      await copy.end();
      const rows = (await tx.execute(sql`select n, t, j from copy_probe order by n`)) as unknown as {
        rows: { n: number; t: string | null; j: unknown }[];
      };
      expect(rows.rows).toEqual([...AWKWARD.map((text, n) => ({ n, t: text, j: { text } })), { n: AWKWARD.length, t: null, j: [] }]);
      return true;
    });
    expect(offered).toBe(database.kind === "postgres");
  });

  it("an aborted COPY keeps nothing and leaves the connection usable in the same transaction", async () => {
    if (database.kind !== "postgres") return;
    const pid = async (tx: typeof database.db) =>
      ((await tx.execute(sql`select pg_backend_pid() as pid`)) as unknown as { rows: { pid: number }[] }).rows[0]!.pid;
    let abortedOn = 0;
    await expect(
      database.db.transaction(async (tx) => {
        abortedOn = await pid(tx);
        await tx.execute(sql`create temporary table copy_abort (n int)`);
        const copy = openCopy(database.db, tx, "copy copy_abort (n) from stdin")!;
        copy.write(encodeCopyRow([1]));
        await copy.abort(new Error("the report turned out to be invalid"));
        throw new Error("rolled back");
      }),
    ).rejects.toThrow("rolled back");
    // The pooled connection that ran the aborted COPY serves the next transaction normally.
    const counted = await database.db.transaction(async (tx) => {
      // The pool hands back the connection released last: the one the COPY was aborted on.
      expect(await pid(tx)).toBe(abortedOn);
      await tx.execute(sql`create temporary table copy_after (n int) on commit drop`);
      const copy = openCopy(database.db, tx, "copy copy_after (n) from stdin")!;
      copy.write(encodeCopyRow([1]) + encodeCopyRow([2]));
      await copy.end();
      return ((await tx.execute(sql`select count(*)::int as c from copy_after`)) as unknown as { rows: { c: number }[] }).rows[0]!.c;
    });
    expect(counted).toBe(2);
  });

  it("a row Postgres rejects makes end() reject with Postgres's error", async () => {
    if (database.kind !== "postgres") return;
    await expect(
      database.db.transaction(async (tx) => {
        await tx.execute(sql`create temporary table copy_bad (n int) on commit drop`);
        const copy = openCopy(database.db, tx, "copy copy_bad (n) from stdin")!;
        copy.write(encodeCopyRow(["not a number"]));
        await copy.end();
      }),
    ).rejects.toThrow(/invalid input syntax for type integer/);
  });
});
