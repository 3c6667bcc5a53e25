/** `ci-test-analytics failed` (docs/splitting.md, "Re-running only failures"): filled in by the next commit. */
import type { OptionValues } from "./args";
import { UsageError } from "./exit-codes";

export async function runFailed(_input: { values: OptionValues }): Promise<number> {
  throw new UsageError("failed: not yet");
}
