/**
 * `npm test` (and `npm run test:pg`): the named tiers of vitest.config.ts in two Vitest processes
 * side by side, then one table of the tests each tier ran.
 *
 * Why two processes: Vitest runs projects of one group on one shared set of workers, all with the
 * same worker count. The workerd tier gains nothing from a second worker (its statements all go
 * through one PGlite behind the serialising gate, so two files only wait on each other), while the
 * node tier uses both cores. In one process the workerd files would hold half the workers doing
 * nothing; here the workerd tier runs on one worker beside the other tiers' two.
 *
 * The Node-side tiers print live; the workerd tier's output is kept and printed when both are done.
 * The exit code is 1 if either process failed. Arguments: the tiers to run (default: unit node
 * workerd browser); any other argument goes to both Vitest processes (a file filter, `-t NAME`).
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type TierTally, formatTierTable } from "../test/support/tier-counts-reporter";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const VITEST = fileURLToPath(new URL("../node_modules/vitest/vitest.mjs", import.meta.url));
/** The projects of vitest.config.ts. */
const TIERS = ["unit", "node", "workerd", "browser", "slow", "slow-workerd"];

type Outcome = { code: number; output: string; tallies: Record<string, TierTally> };

function runVitest(projects: string[], extra: string[], countsFile: string, live: boolean): Promise<Outcome> {
  const args = [VITEST, "run", ...projects.flatMap((name) => ["--project", name]), ...extra];
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { ...process.env, TIER_COUNTS_FILE: countsFile, ...(live ? {} : { FORCE_COLOR: process.stdout.isTTY ? "1" : "0" }) },
    stdio: live ? "inherit" : ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  return new Promise((resolve) => {
    child.on("close", (code, signal) => {
      let tallies: Record<string, TierTally> = {};
      try {
        tallies = JSON.parse(readFileSync(countsFile, "utf8")) as Record<string, TierTally>;
      } catch {
        // No table: the run stopped before its end (its output says why).
      }
      resolve({ code: code ?? (signal ? 1 : 0), output, tallies });
    });
  });
}

async function main() {
  const args = process.argv.slice(2);
  const tiers = args.filter((arg) => TIERS.includes(arg));
  // Anything else goes to both Vitest processes (a file filter, `-t NAME`). It may match files of one process
  // only: the other one then has nothing to run, which is no failure.
  const rest = args.filter((arg) => !TIERS.includes(arg) && arg !== "--");
  const extra = rest.length > 0 ? ["--passWithNoTests", ...rest] : [];
  if (tiers.length === 0) tiers.push("unit", "node", "workerd", "browser");
  const nodeSide = tiers.filter((name) => name !== "workerd");
  const dir = mkdtempSync(join(tmpdir(), "cia-tiers-"));
  try {
    const [nodeRun, workerdRun] = await Promise.all([
      nodeSide.length > 0 ? runVitest(nodeSide, extra, join(dir, "node.json"), true) : null,
      tiers.includes("workerd") ? runVitest(["workerd"], extra, join(dir, "workerd.json"), nodeSide.length === 0) : null,
    ]);
    if (workerdRun && nodeSide.length > 0)
      process.stdout.write(`\n== the workerd tier (run beside the others, printed when both were done)\n${workerdRun.output}`);
    const tallies = { ...nodeRun?.tallies, ...workerdRun?.tallies };
    if (Object.keys(tallies).length > 0) process.stdout.write(formatTierTable(tallies));
    process.exitCode = (nodeRun?.code ?? 0) !== 0 || (workerdRun?.code ?? 0) !== 0 ? 1 : 0;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
