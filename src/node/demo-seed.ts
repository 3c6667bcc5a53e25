/**
 * The demo organization `npm start` (and `npm run dev`) creates on an empty database, so a new
 * user has something real to query: three projects whose CI histories come from the seeded
 * simulator (src/simulator/streams.ts), with anomalies injected on purpose, replayed as JUnit XML
 * through the real upload path (`POST /uploads/v1/test_runs` of an in-process app, the in-process
 * run queue, run processing, the four alert checks). Every alert event is a trip of a real check.
 *
 * Time: each history is shifted so that its last run arrives about an hour before now, and the
 * seeding app runs on a manual clock set to each run's arrival (its start plus its duration plus
 * half a minute) before the run is posted, so runs, processing and events carry a believable
 * history of about a week. Deterministic: fixed seeds; only the shift depends on the clock.
 */
import { and, eq } from "drizzle-orm";
import { type Logger, consoleLogger } from "../lib/logger";
import { type RequestDeps, createApp } from "../app";
import { InMemoryKeyCounter } from "../auth/in-memory-key-counter";
import { alerts, organizations } from "../db/schema";
import { ManualClock } from "../lib/clock";
import type { SecretKeyring } from "../lib/secret-box";
import { createNodeBackground } from "./background";
import { disableAlert, snoozeAlert } from "../services/alerts/alerts";
import type { ServiceDeps } from "../services/shared/context";
import { createOrganization } from "../services/tenancy/organizations";
import { addMember } from "../services/tenancy/memberships";
import { createPasswordUser } from "../auth/people";
import { base64UrlEncode } from "../lib/crypto";
import type { MemberRole } from "../db/schema";
import type { AlertType } from "../lib/vocabulary";
import { createProject } from "../services/tenancy/projects";
import { replayThroughUploads } from "../simulator/replay";
import { type Family, type SimRun, type StreamKnobs, generateStream } from "../simulator/streams";

export type DemoProject = {
  name: string;
  description: string;
  /** Simulator seed, length and tests per run of the generated history. */
  seed: number;
  runs: number;
  tests: number;
  /**
   * The runs uploaded: `count` runs of that history from simulated run `from` on (the project
   * starts uploading mid-life; a short window keeps seeding quick). Simulated run n becomes the
   * project's run n − from + 1.
   */
  window: { from: number; count: number };
  /** The anomaly families injected (the others are off: their checks should stay quiet). */
  families: readonly Family[];
  /** Knob overrides (applied after the seed drew the rest, so they change neither the plan nor the outcomes). */
  knobs: Partial<Pick<StreamKnobs, "minutesBetweenRuns" | "format">>;
  /** The last run arrives this long before now. */
  endsMinutesAgo: number;
  /** CI build numbers of the uploaded runs start after this. */
  firstBuild: number;
};

/**
 * The three demo projects: 60 uploaded runs of about 70 tests each, a run every few hours over
 * about a week. Seeds and windows were picked so that the real checks find the injected
 * anomalies and nothing else (the noise that is not an anomaly — breakages, feature-branch
 * failures, same-commit retries, one-run whole-suite skips, test churn, slow outliers and slow
 * runners — is in every stream). In the project's run numbers:
 *
 * - checkout-service (seed 83, flaky + spike): flaky tests with p = 0.3, 0.1, 0.05 and 0.02 and
 *   a fragile pool with rare background failures, flagged from same-commit retries and flip
 *   history (about 4 events); a 31 % failure spike at run 28.
 * - storefront-api (seed 399, flaky + skip): flaky tests with p = 0.3, 0.1, 0.05 and 0.02 and a
 *   fragile pool (about 5 events); 20 tests newly skipped from run 18 (one event a few runs later).
 * - inventory-api (seed 331, regression + spike): an outage at run 35 (one suite errors:
 *   "Connection refused"), the run and every test 50 % slower from run 29 (one run-duration
 *   event and a few slowest-test events from run 37 on), a 30 % failure spike at run 41.
 */
export const DEMO_PROJECTS: readonly DemoProject[] = [
  {
    name: "checkout-service",
    description: "Payments and order checkout (JUnit from Maven Surefire).",
    seed: 83,
    runs: 150,
    tests: 70,
    window: { from: 91, count: 60 },
    families: ["flaky", "spike"],
    knobs: { minutesBetweenRuns: 200, format: "surefire" },
    endsMinutesAgo: 60,
    firstBuild: 4100,
  },
  {
    name: "storefront-api",
    description: "The web shop's backend: search, accounts and billing (JUnit from Gradle).",
    seed: 399,
    runs: 150,
    tests: 70,
    window: { from: 91, count: 60 },
    families: ["flaky", "skip"],
    knobs: { minutesBetweenRuns: 240, format: "gradle" },
    endsMinutesAgo: 75,
    firstBuild: 2200,
  },
  {
    name: "inventory-api",
    description: "Stock levels and reservations (JUnit from Gradle).",
    seed: 331,
    runs: 150,
    tests: 70,
    window: { from: 48, count: 60 },
    families: ["regression", "spike"],
    knobs: { minutesBetweenRuns: 180, format: "gradle" },
    endsMinutesAgo: 95,
    firstBuild: 870,
  },
];

/** After seeding: this alert is snoozed for 24 hours and this one disabled, so both states show. */
const SNOOZED: { project: string; alertType: AlertType } = { project: "storefront-api", alertType: "test_flakiness" };
const DISABLED: { project: string; alertType: AlertType } = { project: "inventory-api", alertType: "skipped_test_count_creep" };

/** A run is uploaded this long after it finished (the CI job's upload step). */
const UPLOAD_DELAY_MS = 30_000;
const BASE_URL = "http://demo.invalid";
const CI_BASE_URL = "https://ci.example.com";

export async function isDatabaseEmpty(deps: Pick<ServiceDeps, "db">): Promise<boolean> {
  const rows = await deps.db.select({ id: organizations.id }).from(organizations).limit(1);
  return rows.length === 0;
}

/** The runs of the project's simulated history that are uploaded, the history starting at `startAt`. */
function uploadedRuns(spec: DemoProject, startAt: number): SimRun[] {
  const families = { flaky: false, regression: false, spike: false, skip: false };
  for (const family of spec.families) families[family] = true;
  const stream = generateStream({
    seed: spec.seed,
    runs: spec.runs,
    tests: spec.tests,
    knobs: { ...spec.knobs, families, startAt: new Date(startAt).toISOString() },
  });
  return stream.runs.slice(spec.window.from - 1, spec.window.from - 1 + spec.window.count);
}

/** When each run arrives (ms): after it finished and the upload step ran, never before the previous one. */
function arrivalTimes(runs: readonly SimRun[]): number[] {
  const times: number[] = [];
  let previous = Number.NEGATIVE_INFINITY;
  for (const run of runs) {
    previous = Math.max(previous + 1000, Date.parse(run.created_at) + run.duration + UPLOAD_DELAY_MS);
    times.push(previous);
  }
  return times;
}

/**
 * The project's uploaded runs, shifted so that the last one arrives `endsMinutesAgo` before `now`
 * (times do not change what the seed draws, so the shift moves every run by the same amount).
 */
function demoRuns(spec: DemoProject, now: number): SimRun[] {
  const draft = uploadedRuns(spec, 0);
  const lastArrival = arrivalTimes(draft).at(-1) ?? 0;
  const startAt = Math.floor((now - spec.endsMinutesAgo * 60_000 - lastArrival) / 1000) * 1000;
  return uploadedRuns(spec, startAt);
}

/** Info lines of the seeding (one per tripped check) are not worth printing; errors are. */
const quietLogger: Logger = { info: () => {}, error: (message, fields) => consoleLogger.error(message, fields) };

/**
 * Creates the demo organization and returns its API key (shown once). The projects' histories
 * are uploaded to an app of our own whose clock we move; no run or event is written around it.
 * The in-process queue is drained and closed before this returns.
 */
export async function seedDemoOrganization(deps: ServiceDeps & { secrets: SecretKeyring }, options: { logger?: Logger } = {}) {
  const realNow = deps.clock.now().getTime();
  const logger = options.logger ?? quietLogger;
  const clock = new ManualClock(realNow);
  const seeding = { ...deps, clock };
  const histories = DEMO_PROJECTS.map((spec) => demoRuns(spec, realNow));
  const firstStart = Math.min(...histories.map((runs) => Date.parse(runs[0]!.created_at)));

  // The same background work as `npm start` (run processing, alert checks, notifications), on our clock.
  const { queue } = createNodeBackground({
    db: deps.db,
    clock,
    logger,
    webAppUrl: deps.webAppUrl,
    fetch: () => Promise.reject(new Error("The demo seeding sends no notifications.")),
    secrets: deps.secrets,
  });
  // Its answers are read for run numbers only: the base of their URLs does not matter.
  const app = createApp({
    cursorSecret: "demo-seeding-app-serves-no-listings",
    publicBaseUrl: deps.webAppUrl,
    webAppUrl: deps.webAppUrl,
    secrets: deps.secrets,
  });
  const requestDeps: RequestDeps = {
    db: deps.db,
    clock,
    keyCounter: new InMemoryKeyCounter(clock),
    uploadCounter: new InMemoryKeyCounter(clock),
    clientAddress: null,
    runQueue: queue,
    logger,
  };

  let created: Awaited<ReturnType<typeof createOrganization>>;
  const projectIds: string[] = [];
  try {
    clock.set(firstStart - 3 * 86_400_000);
    created = await createOrganization(seeding, { name: "Demo Organization", timeZone: "Europe/Berlin" });
    const organizationId = created.organization.id;
    for (const [index, spec] of DEMO_PROJECTS.entries()) {
      const runs = histories[index]!;
      clock.set(Date.parse(runs[0]!.created_at) - 2 * 86_400_000);
      const { project, upload_token: uploadToken } = await createProject(seeding, organizationId, {
        name: spec.name,
        description: spec.description,
      });
      projectIds.push(project.id);

      // Each upload arrives at its run's time, from a CI build with a number and a link.
      const arrivals = arrivalTimes(runs);
      const byStart = new Map(runs.map((run, i) => [run.created_at, { arrival: arrivals[i]!, build: spec.firstBuild + i + 1 }]));
      const fetchAtRunTime = async (input: Request | string | URL, init?: RequestInit): Promise<Response> => {
        const url = new URL(input instanceof Request ? input.url : String(input));
        const startedAt = url.searchParams.get("started_at");
        if ((init?.method ?? "GET") === "POST" && startedAt !== null) {
          const run = byStart.get(startedAt);
          if (!run) throw new Error(`No simulated run started at ${startedAt}.`);
          clock.set(run.arrival);
          url.searchParams.set("build_id", String(run.build));
          url.searchParams.set("build_url", `${CI_BASE_URL}/${spec.name}/builds/${run.build}`);
        }
        return app.request(url.toString(), init, requestDeps);
      };

      const result = await replayThroughUploads({
        baseUrl: BASE_URL,
        uploadToken,
        runs,
        fetch: fetchAtRunTime as typeof fetch,
        idempotencyPrefix: `demo-${spec.name}`,
        // A run is processed once the in-process queue is idle; waits only back off (5xx, 429).
        pollIntervalMs: 1,
        sleep: (ms) => (ms < 100 ? queue.idle() : new Promise((resolve) => setTimeout(resolve, ms))),
      });
      if (result.failed > 0) {
        const failed = result.runs.find((run) => run.status === "failed");
        throw new Error(`Demo run ${failed?.serviceNumber} of ${spec.name} failed to process: ${failed?.failureReason}`);
      }
    }
  } finally {
    await queue.close();
  }

  // Alert states worth looking at, set at real time so the snooze is current.
  const organizationId = created.organization.id;
  const live = { ...deps, organizationId };
  const alertOf = async (target: { project: string; alertType: AlertType }) => {
    const projectId = projectIds[DEMO_PROJECTS.findIndex((spec) => spec.name === target.project)]!;
    const [row] = await deps.db
      .select({ id: alerts.id })
      .from(alerts)
      .where(and(eq(alerts.projectId, projectId), eq(alerts.alertType, target.alertType)))
      .limit(1);
    return row!.id;
  };
  await snoozeAlert(live, await alertOf(SNOOZED), "24h");
  await disableAlert(live, await alertOf(DISABLED));
  const people = await seedDemoPeople(deps, organizationId);

  return { organizationId, apiKey: created.api_key.secret, projectIds, people };
}

/** The demo's people: who signs in to the web app, with which role. Passwords are made at seeding and printed once. */
const DEMO_PEOPLE: readonly { name: string; email: string; role: MemberRole }[] = [
  { name: "Dana Demo (admin)", email: "demo-admin@example.com", role: "admin" },
  { name: "Max Demo (member)", email: "demo-member@example.com", role: "member" },
];

export type DemoPerson = { email: string; password: string; role: MemberRole };

/** A random password of 16 characters (96 bits), as `npm start` prints it. */
const demoPassword = () => base64UrlEncode(crypto.getRandomValues(new Uint8Array(12)));

/** An admin and a member of the demo organization, with passwords made now (stored as better-auth's scrypt hashes). */
async function seedDemoPeople(deps: ServiceDeps & { secrets: SecretKeyring }, organizationId: string): Promise<DemoPerson[]> {
  const people: DemoPerson[] = [];
  for (const spec of DEMO_PEOPLE) {
    const password = demoPassword();
    const { id } = await createPasswordUser(deps, { name: spec.name, email: spec.email, password });
    await addMember(deps, { organizationId, userId: id, role: spec.role });
    people.push({ email: spec.email, password, role: spec.role });
  }
  return people;
}
