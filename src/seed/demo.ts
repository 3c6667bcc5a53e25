/**
 * The demo organization `npm start` creates on an empty database, so a new user has something
 * real to query: projects with processed runs, suites and cases, and alerts with events.
 * Everything goes through the same services the API and uploads use. Deterministic (seeded).
 */
import { eq } from "drizzle-orm";
import { alerts, organizations } from "../db/schema";
import { ManualClock } from "../lib/clock";
import { recordAlertEvent } from "../services/alert-events";
import { disableAlert, snoozeAlert } from "../services/alerts";
import type { ServiceDeps } from "../services/context";
import { createOrganization } from "../services/organizations";
import { createProject } from "../services/projects";
import { type CaseStatus, type ReportSuite, completeTestRun, recordTestRunArrival } from "../services/test-runs";
import { mulberry32 as seededRandom } from "../lib/seeded-random";


const DEMO_PROJECTS = [
  { name: "checkout-service", description: "Payments and order checkout (JUnit from Maven Surefire).", flaky: "PaymentRetryTest.retries_on_timeout", slowFrom: 10 },
  { name: "web-frontend", description: "Storefront UI (jest-junit and Playwright).", flaky: "cart.spec.ts › updates totals", slowFrom: null },
  { name: "inventory-api", description: null, flaky: null, slowFrom: 8 },
] as const;

export async function isDatabaseEmpty(deps: Pick<ServiceDeps, "db">): Promise<boolean> {
  const rows = await deps.db.select({ id: organizations.id }).from(organizations).limit(1);
  return rows.length === 0;
}

export async function seedDemoOrganization(deps: ServiceDeps, options: { runsPerProject?: number } = {}) {
  const runsPerProject = options.runsPerProject ?? 14;
  const realNow = deps.clock.now().getTime();
  const clock = new ManualClock(realNow - 14 * 86_400_000);
  const seeded = { ...deps, clock };
  const random = seededRandom(20261121);

  const created = await createOrganization(seeded, { name: "Demo Organization", timeZone: "Europe/Berlin" });
  const organizationId = created.organization.id;
  const scope = { ...seeded, organizationId };
  const projectIds: string[] = [];

  for (const spec of DEMO_PROJECTS) {
    clock.advance(3_600_000);
    const { project } = await createProject(seeded, organizationId, { name: spec.name, description: spec.description });
    projectIds.push(project.id);
    const projectAlerts = await deps.db.select().from(alerts).where(eq(alerts.projectId, project.id));
    const alertOf = (type: string) => projectAlerts.find((a) => a.alertType === type)!;

    for (let n = 1; n <= runsPerProject; n++) {
      // Three projects × 14 runs, ~7 h apart, end within the last day: a believable fortnight.
      clock.advance(6 * 3_600_000 + Math.floor(random() * 3_600_000));
      const slow = spec.slowFrom !== null && n >= spec.slowFrom;
      const flakyFails = spec.flaky !== null && random() < 0.35;
      const suites: ReportSuite[] = ["unit", "integration"].map((kind) => ({
        name: `${spec.name} ${kind}`,
        durationMs: 0,
        cases: Array.from({ length: kind === "unit" ? 18 : 6 }, (_, i) => {
          const status: CaseStatus = i === 3 && n % 7 === 0 ? "skipped" : "passed";
          return { name: `${kind}_case_${i + 1}`, classname: `${spec.name}.${kind}`, status, durationMs: Math.round((slow ? 900 : 400) + random() * 200) };
        }),
      }));
      if (spec.flaky) {
        suites[1]!.cases.push({
          name: spec.flaky,
          classname: `${spec.name}.integration`,
          status: flakyFails ? "failed" : "passed",
          durationMs: 1200,
          failureType: flakyFails ? "AssertionError" : null,
          failureMessage: flakyFails ? "expected status 200 but got 504 (upstream timeout)" : null,
        });
      }
      for (const suite of suites) suite.durationMs = suite.cases.reduce((sum, c) => sum + (c.durationMs ?? 0), 0);

      const run = await recordTestRunArrival(seeded, project.id, {
        branch: n % 4 === 0 ? `feature/demo-${n}` : "main",
        commitSha: Array.from({ length: 40 }, () => "0123456789abcdef"[Math.floor(random() * 16)]).join(""),
        buildId: String(1000 + n),
        buildUrl: `https://ci.example.com/${spec.name}/builds/${1000 + n}`,
        tags: ["demo"],
        startedAt: new Date(clock.now().getTime() - 5 * 60_000),
      });
      clock.advance(20_000);
      const processed = await completeTestRun(seeded, run.id, { suites });
      if (!processed) throw new Error(`demo run ${run.id} was processed twice`);

      if (flakyFails && n > 4) {
        clock.advance(1000);
        await recordAlertEvent(seeded, {
          alertId: alertOf("test_flakiness").id,
          testRunId: processed.id,
          metadata: { test_name: spec.flaky, failure_rate: 0.35, window_runs: 20, note: "demo data" },
        });
      }
      if (slow && n === spec.slowFrom) {
        clock.advance(1000);
        await recordAlertEvent(seeded, {
          alertId: alertOf("performance_regression").id,
          testRunId: processed.id,
          metadata: { subject: "run_duration", baseline_ms: 9600, observed_ms: processed.durationMs, note: "demo data" },
        });
      }
    }
  }

  // A few alert states worth looking at: one snoozed, one disabled (at real time, so the snooze is current).
  const liveScope = { ...scope, clock: deps.clock };
  const [firstAlert] = await deps.db.select().from(alerts).where(eq(alerts.projectId, projectIds[1]!)).limit(1);
  const inventoryAlerts = await deps.db.select().from(alerts).where(eq(alerts.projectId, projectIds[2]!));
  if (firstAlert) await snoozeAlert(liveScope, firstAlert.id, "24h");
  const skipAlert = inventoryAlerts.find((a) => a.alertType === "skipped_test_count_creep");
  if (skipAlert) await disableAlert(liveScope, skipAlert.id);

  return { organizationId, apiKey: created.api_key.secret, projectIds };
}
