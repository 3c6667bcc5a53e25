import type { CheckEvent, InMemoryCheck, RunSummary } from "../../../src/checks/types";

export type Fed<S> = { state: S; events: CheckEvent[]; eventsByRun: Map<number, CheckEvent[]> };

/**
 * Feeds runs through a check in order (inMemoryCheck: its per-test entries in a record). With
 * `roundTrip`, the state goes through JSON between runs, as it does when stored in the database.
 */
export function feedCheck<S>(check: InMemoryCheck<S>, runs: RunSummary[], start: S = check.initialState(), roundTrip = false): Fed<S> {
  let state = start;
  const events: CheckEvent[] = [];
  const eventsByRun = new Map<number, CheckEvent[]>();
  for (const run of runs) {
    const result = check.update(roundTrip ? (JSON.parse(JSON.stringify(state)) as S) : state, run);
    state = result.state;
    events.push(...result.events);
    if (result.events.length > 0) eventsByRun.set(run.number, result.events);
  }
  return { state, events, eventsByRun };
}
