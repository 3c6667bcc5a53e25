/**
 * Prints, after the default reporter's summary, how many tests each tier ran and how long its files
 * took, so a change that moves tests between tiers or loses some shows in every run's last lines.
 */
import type { Reporter, TestModule } from "vitest/node";

type Tally = { files: number; passed: number; failed: number; skipped: number; durationMs: number };

export default class TierCountsReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const tiers = new Map<string, Tally>();
    for (const module of testModules) {
      const name = module.project.name || "default";
      const tally = tiers.get(name) ?? { files: 0, passed: 0, failed: 0, skipped: 0, durationMs: 0 };
      tally.files += 1;
      tally.durationMs += module.diagnostic().duration;
      for (const test of module.children.allTests()) {
        const state = test.result().state;
        if (state === "passed") tally.passed += 1;
        else if (state === "failed") tally.failed += 1;
        else tally.skipped += 1;
      }
      tiers.set(name, tally);
    }
    if (tiers.size === 0) return;
    const lines = [...tiers].map(([name, t]) => {
      const run = t.passed + t.failed;
      const notes = [t.failed ? `${t.failed} failed` : "", t.skipped ? `${t.skipped} skipped` : ""].filter(Boolean).join(", ");
      const seconds = (t.durationMs / 1000).toFixed(0);
      return `  ${name.padEnd(8)} ${String(run).padStart(5)} tests in ${String(t.files).padStart(3)} files (${seconds} s of file time)${notes ? `: ${notes}` : ""}`;
    });
    const total = [...tiers.values()].reduce((sum, t) => sum + t.passed + t.failed, 0);
    console.log(
      `\nTests run per tier${process.env.TEST_DATABASE_URL ? " (on Postgres: TEST_DATABASE_URL)" : ""}:\n${lines.join("\n")}\n  total    ${String(total).padStart(5)}\n`,
    );
  }
}
