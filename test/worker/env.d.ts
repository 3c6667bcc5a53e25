import type { WorkerEnv } from "../../src/worker/env";

declare global {
  namespace Cloudflare {
    interface Env extends WorkerEnv {}
  }
}
