import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createReactMachine } from "../../machines/react-machine.js";
import { defineTool } from "../../tools/tool.js";
import { requireApproval } from "../../actors/guards/index.js";
import { resolveModelClient } from "../../actors/openai/openai-model-client.js";
import { PostgresRunStore } from "../../queue/postgres/store.js";
import { startWorker, type Worker } from "../../queue/worker.js";
import type { OpenAIServer } from "../../testing/openai-server.js";
import { makeAgents } from "../queue/fixture-agents.mjs";
import { scriptMessage, startScriptServer, type RunScript } from "../queue/script-model.js";
import { countingPool } from "./counting-pool.js";
import { freshDatabase } from "./database.js";

const jianmu = { createReactMachine, defineTool, ModelClient: { resolve: resolveModelClient }, requireApproval };
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
    await counted?.pool.end();
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
});
