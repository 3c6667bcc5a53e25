/** A statement sent and awaited later: its failure is handled where it is awaited, never reported as unhandled meanwhile. */
export function inFlight<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => undefined);
  return promise;
}
