import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostgresRunStore } from "../../queue/postgres/store.js";
import { startWorker, type Worker } from "../../queue/worker.js";
import type { OpenAIServer } from "../../testing/openai-server.js";
import { makeAgents } from "../queue/fixture-agents.mjs";
import { scriptMessage, startScriptServer, type RunScript } from "../queue/script-model.js";
import { countingPool } from "./counting-pool.js";
import { endPool, freshDatabase } from "./database.js";
import { jianmu } from "../queue/fixture-jianmu.js";

const RUNS = 5;

/**
 * A submitter waiting on many runs reads the outputs of those that finished together in one go: the
 * outputs in one statement, and the conversation streams they are stored against in one pair of
 * statements for all of them, not a pair per run (issue 35: the queue's statements per run).
 */
describe("PostgreSQL run queue: waiting on runs that finished together", () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let server: OpenAIServer;
  let workerStore: PostgresRunStore;
  let waiterStore: PostgresRunStore;
  let counted: ReturnType<typeof countingPool>;
  let worker: Worker;

  beforeAll(async () => {
    db = await freshDatabase();
    server = await startScriptServer();
    workerStore = await PostgresRunStore.connect({ connectionString: db.url, schema: "waits", pollMs: 50 });
    counted = countingPool(db.url);
    // No LISTEN and a slow poll: the waiter learns of the finishes at its next poll, all at once.
    waiterStore = await PostgresRunStore.connect({ connectionString: db.url, schema: "waits", pool: counted.pool, listen: false, pollMs: 1_500 });
  });
  afterAll(async () => {
    await worker?.stop({ timeoutMs: 5_000 });
    await waiterStore?.close();
    await workerStore?.close();
    if (counted) await endPool(counted.pool);
    await server?.close();
    await db?.drop();
  });

  it("reads every output with one statement and the streams they name with two more", async () => {
    const script = (i: number): RunScript => ({ calls: [{ name: "record", note: `call ${i}` }], answer: `answer ${i}` });
    const runIds = Array.from({ length: RUNS }, (_, i) => `together-${i}`);
    for (const [i, runId] of runIds.entries()) await workerStore.submit({ agent: "basic", runId, input: { messages: [scriptMessage(script(i))] } });
    // Waiting before any run can finish, so each wait's first read finds nothing.
    const waits = runIds.map((runId) => waiterStore.wait(runId));
    const agents = makeAgents(jianmu, { baseURL: server.baseURL, journal: workerStore, effect: () => undefined });
    worker = await startWorker({ store: workerStore, agents, concurrency: RUNS, pollMs: 20 });
    // Every run finished (read through the worker's store, which the count leaves out).
    for (const runId of runIds) await workerStore.wait(runId);
    const before = counted.statements();
    const outputs = await Promise.all(waits);
    // The poll that found them: the outputs, then the streams (their chains, their elements). A read per
    // run would be 1 + 2 × 5 = 11. An earlier poll that found none is 1 more.
    expect(counted.statements() - before).toBeLessThanOrEqual(4);
    for (const [i, output] of outputs.entries()) {
      expect(output).toMatchObject({ status: "succeeded", finalAnswer: `answer ${i}` });
      // The conversation came back from the streams: the script message, the call, its result, the answer.
      expect(output.messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant"]);
      expect(output.messages[2]!.content).toContain(`call ${i}`);
    }
  }, 60_000);

  it("with LISTEN, a finished run's output comes in its notification: no read, unless it is too large for one", async () => {
    const runner = await PostgresRunStore.connect({ connectionString: db.url, schema: "told", pollMs: 50 });
    const listening = await PostgresRunStore.connect({ connectionString: db.url, schema: "told", pool: counted.pool, pollMs: 60_000 });
    let told: Worker | undefined;
    try {
      // Its LISTEN is up once it tells everyone to look (a signal without a run).
      const up = new Promise<void>((resolve) => {
        const off = listening.subscribe((signal) => signal.kind === "runnable" && signal.runId === undefined && (off(), resolve()));
      });
      const long = "x".repeat(9_000);
      const answers = ["small 0", "small 1", long];
      const runIds = answers.map((_, i) => `told-${i}`);
      for (const [i, runId] of runIds.entries()) await runner.submit({ agent: "basic", runId, input: { messages: [scriptMessage({ calls: [{ name: "record", note: `told ${i}` }], answer: answers[i]! })] } });
      const before = counted.statements();
      const waits = runIds.map((runId) => listening.wait(runId));
      await up;
      // The waits have made their first read, together (the runs had not started): what follows is what the notifications leave to read.
      while (counted.statements() - before < 1) await new Promise((resolve) => setTimeout(resolve, 10));
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(counted.statements() - before).toBe(1);
      const countFrom = counted.statements();
      const agents = makeAgents(jianmu, { baseURL: server.baseURL, journal: runner, effect: () => undefined });
      told = await startWorker({ store: runner, agents, concurrency: 1, pollMs: 20 });
      const small = await Promise.all(waits.slice(0, 2));
      expect(counted.statements() - countFrom).toBe(0);
      for (const [i, output] of small.entries()) {
        expect(output).toMatchObject({ status: "succeeded", finalAnswer: answers[i], runId: runIds[i] });
        expect(output.messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant"]);
        // What the notification carried is what the database holds.
        expect(output).toEqual(await runner.wait(runIds[i]!));
      }
      const large = await waits[2]!;
      // 9,000 characters do not fit a notification (under 8000 bytes): that output was read.
      expect(counted.statements() - countFrom).toBeGreaterThanOrEqual(1);
      expect(large.finalAnswer).toBe(long);
    } finally {
      await told?.stop({ timeoutMs: 5_000 });
      await listening.close();
      await runner.close();
    }
  }, 60_000);
});
