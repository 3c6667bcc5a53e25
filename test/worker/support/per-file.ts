/** Set up before every file of the workerd tiers: nothing a previous file set on the Worker reaches it (resetWorkerRuntime). */
import { beforeAll } from "vitest";
import { resetWorkerRuntime } from "./harness";

beforeAll(() => resetWorkerRuntime());
