import type { WorkerEnv } from "../../src/worker/env";

declare global {
  namespace Cloudflare {
    // eslint-disable-next-line @typescript-eslint/no-empty-object-type -- declaration merging: the test env is the Worker's.
    interface Env extends WorkerEnv {}
  }
}
