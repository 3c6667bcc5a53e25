/**
 * The fault and fuzz suite's short profile on Node (test/support/fuzz/fuzz.ts has the
 * invariants): a few hundred seeded requests over every operation of the three OpenAPI documents,
 * some while the database, the key counters or the run queue is down. The long profile is
 * `npm run fuzz -- --seed N --count M`.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { type Harness, createHarness } from "../support/harness";
import { createFuzzFixtures, runFuzz, summaryLine } from "../support/fuzz/fuzz";
import { nodeFuzzTarget } from "../support/fuzz/node-target";

const SEED = 20261124;
const COUNT = 400;

let h: Harness;
let target: ReturnType<typeof nodeFuzzTarget>;
beforeAll(async () => {
  h = await createHarness();
  target = nodeFuzzTarget(h);
});
afterAll(async () => {
  await target.close();
  await h.close();
});

it(`${COUNT} seeded requests: no 5xx, every error in the envelope, every 2xx as documented, every status declared`, async () => {
  const fixtures = await createFuzzFixtures(h);
  const summary = await runFuzz({ target, fixtures, seed: SEED, count: COUNT });
  console.log(summaryLine(`node (${process.env.TEST_DATABASE_URL ? "postgres" : "pglite"})`, summary));
  expect(summary.violations.slice(0, 10)).toEqual([]);
  expect(summary.operationsCovered).toBe(summary.operations);
  expect(summary.faulted).toBeGreaterThan(0);
});
