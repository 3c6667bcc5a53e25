/**
 * The in-process queue's hand-over of payloads: the first attempt of a message receives the
 * payload given to `send` (processing then skips reading it back); retries, delayed messages and
 * payloads over the memory budget do not, and their consumers read the stored payload.
 */
import { describe, expect, it } from "vitest";
import { HELD_PAYLOAD_BUDGET_CHARS, InProcessRunQueue } from "../../src/ingest/in-process-run-queue";
import type { DeliveryAttempt, QueueMessage } from "../../src/ingest/run-queue";

type Seen = { message: QueueMessage; number: number; finalAttempt: boolean; payload?: DeliveryAttempt["payload"] };

function recordingQueue(options: { failFirst?: boolean } = {}) {
  const seen: Seen[] = [];
  const queue = new InProcessRunQueue(
    async (message, attempt) => {
      seen.push({ message, ...attempt });
      if (options.failFirst && attempt.number === 1) throw new Error("database briefly unavailable");
    },
    { retryDelayMs: () => 1, maxAttempts: 3 },
  );
  return { queue, seen };
}

const payload = (chars: number) => ({ format: "junit_xml" as const, content: "x".repeat(chars) });

describe("payload hand-over", () => {
  it("the first attempt receives the payload given to send", async () => {
    const { queue, seen } = recordingQueue();
    const handed = payload(10);
    await queue.send({ testRunId: 1 }, { payload: handed });
    await queue.idle();
    expect(seen).toEqual([{ message: { testRunId: 1 }, number: 1, finalAttempt: false, payload: handed }]);
  });

  it("a retry does not: it reads the stored payload", async () => {
    const { queue, seen } = recordingQueue({ failFirst: true });
    await queue.send({ testRunId: 2 }, { payload: payload(10) });
    await queue.idle();
    expect(seen.map((s) => [s.number, s.payload !== undefined])).toEqual([
      [1, true],
      [2, false],
    ]);
  });

  it("a delayed message does not", async () => {
    const { queue, seen } = recordingQueue();
    await queue.send({ testRunId: 3 }, { payload: payload(10), delaySeconds: 0.001 });
    await queue.idle();
    expect(seen).toHaveLength(1);
    expect(seen[0]!.payload).toBeUndefined();
  });

  it("payloads beyond the memory budget are not held; the budget frees as messages are delivered", async () => {
    const { queue, seen } = recordingQueue();
    const half = Math.floor(HELD_PAYLOAD_BUDGET_CHARS / 2) + 1;
    // Three sends before the queue runs: the first two cannot both fit; the small third one still does.
    await Promise.all([
      queue.send({ testRunId: 10 }, { payload: payload(half) }),
      queue.send({ testRunId: 11 }, { payload: payload(half) }),
      queue.send({ testRunId: 12 }, { payload: payload(10) }),
    ]);
    await queue.idle();
    expect(seen.map((s) => [(s.message as { testRunId: number }).testRunId, s.payload !== undefined])).toEqual([
      [10, true],
      [11, false],
      [12, true],
    ]);
    // All delivered: the whole budget is free again.
    await queue.send({ testRunId: 13 }, { payload: payload(HELD_PAYLOAD_BUDGET_CHARS) });
    await queue.idle();
    expect(seen.at(-1)!.payload).toBeDefined();
  });
});
