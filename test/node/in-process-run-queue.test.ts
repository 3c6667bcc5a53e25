/**
 * The in-process queue's hand-over of payloads: the first attempt of a message receives the
 * payload given to `send` (processing then skips reading it back); retries, delayed messages and
 * payloads over the memory budget do not, and their consumers read the stored payload. And its
 * retries: attempts that met an unavailable database do not use up the message's attempts.
 */
import { describe, expect, it } from "vitest";
import { HELD_PAYLOAD_BUDGET_CHARS, InProcessRunQueue } from "../../src/node/in-process-run-queue";
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

describe("retries", () => {
  /** A consumer that fails with `error` the first `failures` times, then succeeds. */
  function failingQueue(failures: number, error: () => Error) {
    const seen: Seen[] = [];
    const queue = new InProcessRunQueue(
      async (message, attempt) => {
        seen.push({ message, ...attempt });
        if (seen.length <= failures) throw error();
      },
      { retryDelayMs: () => 1, outageRetryDelayMs: () => 1, maxAttempts: 3 },
    );
    return { queue, seen };
  }

  const connectionError = (code: string, message: string) => Object.assign(new Error(message), { code });

  it("an attempt that met an unavailable database is retried as the same attempt, for as long as it takes", async () => {
    const errors = [
      () => connectionError("ECONNREFUSED", "connect ECONNREFUSED 127.0.0.1:5432"),
      () => new Error("Failed query: rollback", { cause: new Error("Client has encountered a connection error and is not queryable") }),
      () => new Error("Connection terminated unexpectedly"),
      () => connectionError("57P01", "terminating connection due to administrator command"),
    ];
    let next = 0;
    const { queue, seen } = failingQueue(8, () => errors[next++ % errors.length]!());
    await queue.send({ testRunId: 20 });
    await queue.idle();
    expect(seen).toHaveLength(9);
    expect(seen.every((s) => s.number === 1 && !s.finalAttempt)).toBe(true);
  });

  it("any other failure uses up an attempt; the last one is final and not retried", async () => {
    const { queue, seen } = failingQueue(5, () => new Error('syntax error at or near "selec"'));
    await queue.send({ testRunId: 21 });
    await queue.idle();
    expect(seen.map((s) => [s.number, s.finalAttempt])).toEqual([
      [1, false],
      [2, false],
      [3, true],
    ]);
  });
});
