/**
 * The Worker's cron trigger (wrangler.toml `[triggers]`): work whose queue message was lost is
 * queued again through the real queue binding, and the Worker's own consumer then takes it: a run
 * pending for 20 minutes is processed, an e-mail never attempted is attempted (held: no SMTP here),
 * one whose retry never came is attempted again. What is recent, or already done, is left alone.
 */
import { createExecutionContext, createScheduledController, env, waitOnExecutionContext } from "cloudflare:test";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, expect, it } from "vitest";
import { emailOutbox } from "../../src/db/schema";
import { writeEmail } from "../../src/services/shared/email-outbox";
import { RUN_STALLED_AFTER_MS } from "../../src/services/stalled-work";
import { recordTestRunArrival } from "../../src/services/runs/test-runs";
import worker from "./support/worker-entry";
import { type Harness, createHarness, testSecrets } from "./support/harness";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

const REPORT = `<testsuite name="s"><testcase name="a"/><testcase name="b"><failure message="no"/></testcase></testsuite>`;

async function cron() {
  const ctx = createExecutionContext();
  await worker.scheduled!(createScheduledController({ cron: "*/10 * * * *", scheduledTime: h.clock.now().getTime() }), env, ctx);
  await waitOnExecutionContext(ctx);
}

async function waitFor<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const emailStatus = async (id: string) =>
  (await h.db.select({ status: emailOutbox.status }).from(emailOutbox).where(eq(emailOutbox.id, id)))[0]!.status;

it("queues again a run pending for 20 minutes and e-mails whose message or retry was lost; the consumer takes them; recent work is left alone", async () => {
  const { organization } = await h.newOrganization();
  const { project } = await h.newProject(organization.id);
  const mail = (subject: string) =>
    writeEmail(
      { db: h.db, clock: h.clock, secrets: testSecrets },
      { organizationId: organization.id, kind: "invitation", to: "someone@example.com", subject, text: "body" },
    );

  // Recorded, never queued: as when the queue refused the upload's message.
  const lost = (await recordTestRunArrival(h, project.id, {}, { format: "junit_xml", content: REPORT })).run;
  const neverAttempted = await mail("never attempted");
  const retryLost = await mail("retry lost");
  await h.db
    .update(emailOutbox)
    .set({ attempts: 1, lastAttemptAt: h.clock.now(), lastError: "421 try later" })
    .where(eq(emailOutbox.id, retryLost));
  h.clock.advance(RUN_STALLED_AFTER_MS + 5 * 60_000);
  const recent = (await recordTestRunArrival(h, project.id, {}, { format: "junit_xml", content: REPORT })).run;
  const recentMail = await mail("recent");

  await cron();
  const processed = await waitFor(
    () => h.runRow(lost.id),
    (row) => row.status !== "pending",
  );
  expect(processed).toMatchObject({ status: "processed", testsCount: 2, failedCount: 1 });
  expect(
    await waitFor(
      () => emailStatus(neverAttempted),
      (status) => status !== "pending",
    ),
  ).toBe("held");
  // Attempted 20 minutes ago: its 2-hour retry may still come, so it waits.
  expect(await emailStatus(retryLost)).toBe("pending");
  expect((await h.runRow(recent.id)).status).toBe("pending");
  expect(await emailStatus(recentMail)).toBe("pending");

  // Past the longest retry delay, the lost retry is attempted; the recent run is now stalled too.
  h.clock.advance(3 * 3_600_000);
  await cron();
  expect(
    await waitFor(
      () => emailStatus(retryLost),
      (status) => status !== "pending",
    ),
  ).toBe("held");
  expect(
    (
      await waitFor(
        () => h.runRow(recent.id),
        (row) => row.status !== "pending",
      )
    ).status,
  ).toBe("processed");
  expect(
    await waitFor(
      () => emailStatus(recentMail),
      (status) => status !== "pending",
    ),
  ).toBe("held");
});
