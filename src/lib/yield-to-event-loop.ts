/**
 * Lets other work (the database driver's I/O, other requests) run between slices of a long
 * synchronous job: parsing a large report, matching many files against CODEOWNERS.
 */
export const yieldToEventLoop = (): Promise<void> =>
  new Promise((resolve) => (typeof setImmediate === "function" ? setImmediate(resolve) : setTimeout(resolve, 0)));
