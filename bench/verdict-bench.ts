/**
 * The verdicts' section of `npm run bench:detection` (issue 28's correctness figures): simulated
 * streams stored by the service run by run on a Postgres database made for the run
 * (src/simulator/verdict-replay.ts: arrival, processing with the comparison, the alert checks),
 * their stored verdicts scored against the streams' truth (bench/verdict-scoring.ts), over
 * - the verdict scenario family (src/simulator/verdict-streams.ts): default-branch and
 *   feature-branch runs naming their base commit, every scenario of docs/verdicts.md;
 * - the checks' corpus (src/simulator/streams.ts, the seeds the checks are scored on): no base
 *   commit named, so each run is compared with the default-branch run before it; a slightly flaky
 *   test fails there before it is known as flaky.
 * Streams are stored `concurrency` at a time (one project each).
 */
import { ManualClock } from "../src/lib/clock";
import type { Logger } from "../src/lib/logger";
import type { Database } from "../src/db/types";
import { createOrganization } from "../src/services/tenancy/organizations";
import { createProject } from "../src/services/tenancy/projects";
import type { FailureCauses, SimStream } from "../src/simulator/stream-types";
import { replayVerdicts } from "../src/simulator/verdict-replay";
import { type VerdictStream, generateVerdictStream } from "../src/simulator/verdict-streams";
import { type RunTruth, streamVerdictTruth } from "../src/simulator/verdict-truth";
import { withBenchDatabase } from "./common";
import { verdictReport } from "./verdict-report";
import { type VerdictScore, failedOnMainBefore, newVerdictScore, scoreVerdicts } from "./verdict-scoring";

export type VerdictBenchOptions = {
  serverUrl: string;
  familySeeds: number[];
  familyOptions: { tests: number; warmupRuns: number; scenarioCommits: number };
  corpusSeeds: number[];
  /** The corpus's stream of a seed, with its failure causes (the checks' corpus as the bench makes it). */
  corpusStream: (seed: number) => { stream: SimStream; causes: FailureCauses };
  corpusText: string;
  concurrency: number;
  log: (line: string) => void;
};

export type VerdictTarget = { check: string; target: string; value: string; pass: boolean };
export type VerdictSection = { lines: string[]; targets: VerdictTarget[]; family: VerdictScore; corpus: VerdictScore; samples: string[] };

const quiet: Logger = { info: () => {}, error: (message, fields) => console.error(JSON.stringify({ message, ...fields })) };
const WEB_APP_URL = "https://app.example.com";

/** Stores one stream in a project of its own and scores it. */
async function scoreStream(
  db: Database,
  score: VerdictScore,
  label: string,
  stream: Pick<VerdictStream, "runs" | "quarantines"> & { truth: readonly (RunTruth & { scored?: boolean })[] },
): Promise<void> {
  const clock = new ManualClock(Date.parse(stream.runs[0]!.created_at));
  const deps = { db, clock, logger: quiet, webAppUrl: WEB_APP_URL };
  const { organization } = await createOrganization(deps, { name: label });
  const { project } = await createProject(deps, organization.id, { name: label });
  const stored = await replayVerdicts(deps, { id: project.id, organizationId: organization.id }, stream);
  scoreVerdicts(score, stream.truth, stored, label, failedOnMainBefore(stream.runs));
}

/** Runs `jobs` at most `concurrency` at a time. */
async function pool(jobs: (() => Promise<void>)[], concurrency: number): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < jobs.length) await jobs[next++]!();
  };
  await Promise.all(Array.from({ length: Math.max(1, concurrency) }, worker));
}

export async function runVerdictBench(options: VerdictBenchOptions): Promise<VerdictSection> {
  const { log } = options;
  const family = newVerdictScore();
  const corpus = newVerdictScore();
  const started = performance.now();
  let storedRuns = 0;
  const progress = (label: string, runs: number) => {
    storedRuns += runs;
    log(`verdicts: ${label} stored (${storedRuns} runs so far, ${((performance.now() - started) / 1000).toFixed(0)} s)`);
  };
  await withBenchDatabase(options.serverUrl, "cia_verdict_bench", async (database) => {
    const jobs = [
      ...options.familySeeds.map((seed) => async () => {
        const stream = generateVerdictStream({ seed, ...options.familyOptions });
        await scoreStream(database.db, family, `family seed ${seed}`, stream);
        progress(`family seed ${seed}`, stream.runs.length);
      }),
      ...options.corpusSeeds.map((seed) => async () => {
        const { stream, causes } = options.corpusStream(seed);
        const truth = streamVerdictTruth(stream, causes);
        await scoreStream(database.db, corpus, `corpus seed ${seed}`, { runs: stream.runs, quarantines: [], truth });
        progress(`corpus seed ${seed}`, stream.runs.length);
      }),
    ];
    await pool(jobs, options.concurrency);
  });
  const seconds = (performance.now() - started) / 1000;
  const { lines, targets } = verdictReport({ ...options, family, corpus, seconds, storedRuns });
  return { lines, targets, family, corpus, samples: [...family.samples, ...corpus.samples] };
}
