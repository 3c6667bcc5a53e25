import type { ReportSuite } from "../../src/ingest/report";

/**
 * Emitted suites put back together: the parts of a suite handed out while it was read
 * (ReportSuite.continued) joined to the emission that ends it, as the store joins them. Also
 * returns how many parts there were.
 */
export function joinedParts(emissions: readonly ReportSuite[]): { suites: ReportSuite[]; parts: number } {
  const suites: ReportSuite[] = [];
  let open: ReportSuite | null = null;
  let parts = 0;
  for (const emission of emissions) {
    if (emission.continued) parts++;
    if (open) {
      open.cases.push(...emission.cases);
      if (!emission.continued) {
        suites.push({ ...open, suites: emission.suites });
        open = null;
      }
      continue;
    }
    if (emission.continued) {
      const { continued: _continued, ...first } = emission;
      open = { ...first, cases: [...emission.cases] };
    } else suites.push(emission);
  }
  if (open) throw new Error(`the parts of suite "${open.name}" never ended`);
  return { suites, parts };
}
