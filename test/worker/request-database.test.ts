/**
 * The Worker's app is built once per isolate over `requestDatabase`, which must resolve to the
 * database of the request being served (AsyncLocalStorage), also when requests interleave.
 */
import { describe, expect, it } from "vitest";
import type { Database } from "../../src/db/types";
import { requestDatabase, withRequestDatabase } from "../../src/worker/request-database";

class FakeDatabase {
  constructor(readonly name: string) {}
  whoAmI(): string {
    return this.name;
  }
}

const fake = (name: string) => new FakeDatabase(name) as unknown as Database;
const whoAmI = () => (requestDatabase as unknown as FakeDatabase).whoAmI();
const tick = () => new Promise((resolve) => setTimeout(resolve, 1));

describe("requestDatabase", () => {
  it("resolves to the database of the request in progress, across awaits, with requests interleaved", async () => {
    const seen = await Promise.all(
      ["a", "b", "c"].map((name) =>
        withRequestDatabase(fake(name), async () => {
          const before = whoAmI();
          await tick();
          await Promise.resolve();
          return [before, whoAmI(), requestDatabase instanceof FakeDatabase];
        }),
      ),
    );
    expect(seen).toEqual([
      ["a", "a", true],
      ["b", "b", true],
      ["c", "c", true],
    ]);
  });

  it("throws when used outside a request rather than reaching another request's database", () => {
    expect(() => whoAmI()).toThrow(/No request database/);
  });
});
