/**
 * The Worker's cron deletes the payload objects of its R2 bucket (PAYLOADS, simulated by
 * miniflare) that no run holds once they are older than the grace: what an upload request left
 * when it died between writing the object and recording its run. An object younger than the
 * grace (its request may still be recording the run) and one a pending run's payload row holds
 * are kept. The objects' age is R2's own upload time, so the Worker's clock is set from it.
 */
import { createExecutionContext, createScheduledController, env, waitOnExecutionContext } from "cloudflare:test";
import { afterAll, beforeAll, expect, it } from "vitest";
import { ORPHAN_GRACE_MS } from "../../src/services/runs/payload-sweep";
import { recordTestRunArrival } from "../../src/services/runs/test-runs";
import worker from "./support/worker-entry";
import { type Harness, createHarness } from "./support/harness";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

const REPORT = `<testsuite name="s"><testcase name="a"/></testsuite>`;

async function cron() {
  const ctx = createExecutionContext();
  await worker.scheduled!(createScheduledController({ cron: "*/10 * * * *", scheduledTime: h.clock.now().getTime() }), env, ctx);
  await waitOnExecutionContext(ctx);
}

async function put(): Promise<{ key: string; uploaded: number }> {
  const key = `uploads/${crypto.randomUUID()}`;
  const object = await env.PAYLOADS!.put(key, REPORT, { customMetadata: {} });
  return { key, uploaded: object!.uploaded.getTime() };
}

it("deletes an object no run holds once older than the grace; keeps a younger one and one a pending run holds", async () => {
  const { organization } = await h.newOrganization();
  const { project } = await h.newProject(organization.id);
  const held = await put();
  const orphan = await put();
  await new Promise((resolve) => setTimeout(resolve, 20));
  const young = await put();
  expect(young.uploaded - orphan.uploaded).toBeGreaterThanOrEqual(2);

  // The Worker's now: the grace has passed for the first two objects, not (by 1 ms) for the last.
  h.clock.set(young.uploaded + ORPHAN_GRACE_MS - 1);
  // Recorded now, so the cron's own requeue does not take the run (and its object) away first.
  const { run } = await recordTestRunArrival(h, project.id, {}, { format: "junit_xml", objectKey: held.key });

  await cron();
  expect(await env.PAYLOADS!.head(orphan.key)).toBeNull();
  expect(await env.PAYLOADS!.head(young.key)).not.toBeNull();
  expect(await env.PAYLOADS!.head(held.key)).not.toBeNull();
  expect((await h.runRow(run.id)).status).toBe("pending");

  // Past the grace for the last one too: it goes; the held one stays while its run is pending.
  h.clock.advance(2);
  await cron();
  expect(await env.PAYLOADS!.head(young.key)).toBeNull();
  expect(await env.PAYLOADS!.head(held.key)).not.toBeNull();
});
