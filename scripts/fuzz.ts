/**
 * `npm run fuzz -- [--seed N] [--count M]`: the fault and fuzz suite's long profile (the short
 * one runs in `npm test`), on Node, against the app in process over an in-memory PGlite, or over
 * the Postgres database DATABASE_URL names (it is migrated; the fuzz writes organizations into
 * it). Prints the summary line and every violation with the request that caused it; exits 1 if
 * there is any. Invariants and generation: test/support/fuzz/fuzz.ts.
 */
import { parseArgs } from "node:util";
import { openDatabase } from "../src/node/database";
import { inProcessHarness } from "../test/support/harness-core";
import { createFuzzFixtures, runFuzz, summaryLine } from "../test/support/fuzz/fuzz";
import { nodeFuzzTarget } from "../test/support/fuzz/node-target";

const { values } = parseArgs({
  options: { seed: { type: "string", default: String(Date.now() % 1_000_000_000) }, count: { type: "string", default: "5000" } },
});
const seed = Number(values.seed);
const count = Number(values.count);
if (!Number.isInteger(seed) || !Number.isInteger(count) || count < 1) {
  console.error("usage: npm run fuzz -- [--seed <integer>] [--count <requests>]");
  process.exit(2);
}

const database = await openDatabase(process.env.DATABASE_URL || "memory://");
await database.migrate();
// A quota no long run reaches: the profile is about answers, not the rate limit (the short profile sees 429s).
const rateLimit = { limit: 10_000_000, windowMs: 60_000 };
const h = inProcessHarness(database.db, { rateLimit }, () => database.close());
const target = nodeFuzzTarget(h, { rateLimit });
try {
  const fixtures = await createFuzzFixtures(h);
  const summary = await runFuzz({ target, fixtures, seed, count });
  for (const violation of summary.violations)
    console.log(`#${violation.index} ${violation.kind} ${violation.status} ${violation.request}\n    ${violation.problem}`);
  console.log(summaryLine(`node (${database.kind})`, summary));
  await h.queue.close();
  process.exitCode = summary.violations.length > 0 ? 1 : 0;
} finally {
  await target.close();
  await h.close();
}
