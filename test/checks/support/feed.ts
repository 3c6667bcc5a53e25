import { expect } from "vitest";
import type { CheckEvent, InMemoryCheck, RunSummary } from "../../../src/checks/types";

export type Fed<S> = { state: S; events: CheckEvent[]; eventsByRun: Map<number, CheckEvent[]> };

/** Keys per chunk of the chunked twin: small, so that most runs are cut into several chunks. */
const TWIN_CHUNK_KEYS = 3;

/**
 * Feeds runs through a check in order (inMemoryCheck: its per-test entries in a record). With
 * `roundTrip`, the state goes through JSON between runs, as it does when stored in the database.
 *
 * Every run is also given to the check cut into chunks of 3 keys (the service cuts a large run
 * into chunks read through a cursor): the state, the entries and the events must be the same.
 */
export function feedCheck<S>(check: InMemoryCheck<S>, runs: RunSummary[], start: S = check.initialState(), roundTrip = false): Fed<S> {
  const twin = check.chunked?.(TWIN_CHUNK_KEYS);
  let state = start;
  const events: CheckEvent[] = [];
  const eventsByRun = new Map<number, CheckEvent[]>();
  for (const run of runs) {
    const input = roundTrip ? (JSON.parse(JSON.stringify(state)) as S) : state;
    const result = check.update(input, run);
    if (twin) {
      const cut = twin.update(input, run);
      if (JSON.stringify(cut) !== JSON.stringify(result)) expect({ run: run.number, ...cut }).toEqual({ run: run.number, ...result });
    }
    state = result.state;
    events.push(...result.events);
    if (result.events.length > 0) eventsByRun.set(run.number, result.events);
  }
  return { state, events, eventsByRun };
}
