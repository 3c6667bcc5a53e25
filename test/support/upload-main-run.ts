import type { createHarness } from "./harness";

type Harness = Awaited<ReturnType<typeof createHarness>>;
export type MainRunCase = { name: string; status: "passed" | "failed" | "errored" | "skipped" };

/**
 * Uploads one JSON run on main (a minute after the last, classname `Shop`, failures with the
 * message "boom") and waits for its processing and its checks; throws when the run failed.
 */
export async function uploadMainRun(h: Harness, uploadToken: string, cases: MainRunCase[], commit: string) {
  h.clock.advance(60_000);
  const suites = [
    { name: "s", cases: cases.map((c) => ({ ...c, classname: "Shop", failure_message: c.status === "passed" ? null : "boom" })) },
  ];
  const done = await h.uploadAndWait(uploadToken, { branch: "main", commit_sha: commit, suites });
  if (done.status !== "processed") throw new Error(`run failed: ${done.failure_reason}`);
  await h.queue.idle();
  return done;
}
