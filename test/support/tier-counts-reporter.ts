/**
 * Prints, after the default reporter's summary, how many tests each tier ran and how long its files
 * took, so a change that moves tests between tiers or loses some shows in every run's last lines.
 * Under scripts/test-tiers.ts (TIER_COUNTS_FILE set) it writes the tallies to that file instead,
 * and the script prints one table for its two Vitest processes.
 */
import { writeFileSync } from "node:fs";
import type { Reporter, TestModule } from "vitest/node";

export type TierTally = { files: number; passed: number; failed: number; skipped: number; durationMs: number };

export function formatTierTable(tiers: Record<string, TierTally>): string {
  const order = ["unit", "node", "workerd", "browser", "slow", "slow-workerd"];
  const names = Object.keys(tiers).sort((a, b) => (order.indexOf(a) + 1 || 99) - (order.indexOf(b) + 1 || 99));
  const lines = names.map((name) => {
    const t = tiers[name]!;
    const notes = [t.failed ? `${t.failed} failed` : "", t.skipped ? `${t.skipped} skipped` : ""].filter(Boolean).join(", ");
    const run = String(t.passed + t.failed).padStart(5);
    return `  ${name.padEnd(12)} ${run} tests in ${String(t.files).padStart(3)} files (${(t.durationMs / 1000).toFixed(0)} s of file time)${notes ? `: ${notes}` : ""}`;
  });
  const total = Object.values(tiers).reduce((sum, t) => sum + t.passed + t.failed, 0);
  const where = process.env.TEST_DATABASE_URL ? " (on Postgres: TEST_DATABASE_URL)" : "";
  return `\nTests run per tier${where}:\n${lines.join("\n")}\n  total        ${String(total).padStart(5)}\n`;
}

function tally(testModules: ReadonlyArray<TestModule>): Record<string, TierTally> {
  const tiers: Record<string, TierTally> = {};
  for (const module of testModules) {
    const t = (tiers[module.project.name || "default"] ??= { files: 0, passed: 0, failed: 0, skipped: 0, durationMs: 0 });
    t.files += 1;
    t.durationMs += module.diagnostic().duration;
    for (const test of module.children.allTests()) {
      const state = test.result().state;
      if (state === "passed") t.passed += 1;
      else if (state === "failed") t.failed += 1;
      else t.skipped += 1;
    }
  }
  return tiers;
}

export default class TierCountsReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const tiers = tally(testModules);
    if (process.env.TIER_COUNTS_FILE) writeFileSync(process.env.TIER_COUNTS_FILE, JSON.stringify(tiers));
    else if (Object.keys(tiers).length > 0) console.log(formatTierTable(tiers));
  }
}
