/** The four checks, by alert type (docs/alert-checks.md; each file documents its rule and state). */
import { failureRateSpikeCheck } from "./failure-rate-spike";
import { flakinessCheck } from "./flakiness";
import { performanceRegressionCheck } from "./performance-regression";
import { skippedCreepCheck } from "./skipped-creep";
import type { Check, CheckRegistry } from "./types";

export const CHECKS: CheckRegistry = {
  test_flakiness: flakinessCheck as Check<unknown>,
  performance_regression: performanceRegressionCheck as Check<unknown>,
  failure_rate_spike: failureRateSpikeCheck as Check<unknown>,
  skipped_test_count_creep: skippedCreepCheck as Check<unknown>,
};
