import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_INPUT_LIMITS } from "../../machines/persistence/snapshot-limits.js";
import { PostgresRunStore } from "../../queue/postgres/store.js";
import { startWorker, type Worker } from "../../queue/worker.js";
import type { WorkerEvent } from "../../queue/worker-events.js";
import type { OpenAIServer } from "../../testing/openai-server.js";
import { makeAgents } from "../queue/fixture-agents.mjs";
import { scriptMessage, startScriptServer, type RunScript } from "../queue/script-model.js";
import { freshDatabase } from "./database.js";
import { jianmu } from "../queue/fixture-jianmu.js";


/**
 * Issue 34, M4 on a real server: a 100 MB message was taken, never finished, and each claim of it
 * blocked the worker long enough that its other runs lost their leases. Now the input limit keeps a
 * message under 16 Mi characters (past it, submit refuses: test/queue/conformance.ts), and a run at
 * that limit finishes once, beside the worker's other runs, none of them fenced or given up.
 */
describe("PostgreSQL run queue: a message at the input limit beside other runs", () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let server: OpenAIServer;
  let store: PostgresRunStore;
  let worker: Worker;
  const events: WorkerEvent[] = [];

  beforeAll(async () => {
    db = await freshDatabase();
    server = await startScriptServer();
    store = await PostgresRunStore.connect({ connectionString: db.url, schema: "huge", pollMs: 100 });
    const agents = makeAgents(jianmu, { baseURL: server.baseURL, journal: store, effect: () => undefined });
    // A third of the default lease. Writing the checkpoint of a run at the limit blocks the process for
    // up to ~1.7 s on two loaded cores; with a 3 s lease one run beside it was once fenced (and claimed
    // again): docs/scale.md says to keep leases well above that.
    worker = await startWorker({ store, agents, concurrency: 4, leaseMs: 10_000, pollMs: 50, onEvent: (e) => events.push(e) });
  });
  afterAll(async () => {
    await worker?.stop({ timeoutMs: 5_000 });
    await store?.close();
    await server?.close();
    await db?.drop();
  });

  it("finishes the huge run once and every other run of the worker, with no lease lost", async () => {
    const script = (answer: string): RunScript => ({ calls: [{ name: "record", note: answer }], answer });
    // The message's JSON just under the limit (the script message beside it is small).
    const huge = "x".repeat(DEFAULT_INPUT_LIMITS.maxChars - 4_096);
    const big = await store.submit({ agent: "basic", runId: "huge", input: { messages: [scriptMessage(script("huge done")), { role: "user", content: huge }] } });
    const others = await Promise.all(Array.from({ length: 6 }, (_, i) => store.submit({ agent: "basic", runId: `beside-${i}`, input: { messages: [scriptMessage(script(`beside ${i}`))] } })));

    const output = await store.wait(big);
    expect(output).toMatchObject({ status: "succeeded", finalAnswer: "huge done" });
    expect(output.messages[1]!.content).toHaveLength(huge.length);
    for (const [i, runId] of others.entries()) expect(await store.wait(runId)).toMatchObject({ status: "succeeded", finalAnswer: `beside ${i}` });
    expect(events.filter((e) => e.type === "run.claimed" && e.runId === big)).toHaveLength(1);
    expect(events.filter((e) => e.type === "run.fenced" || e.type === "run.abandoned")).toEqual([]);
  }, 120_000);
});
