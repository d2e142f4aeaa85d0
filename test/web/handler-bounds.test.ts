import { afterEach, describe, expect, it } from "vitest";
import { createReactMachine, ModelClient } from "../../index.js";
import { agentHandler, ErrorBodySchema, RunSnapshotSchema, type AgentHandler, type AgentHandlerOptions } from "../../http.js";
import { MemoryCheckpointStore } from "../../machines/persistence/checkpoints/memory-store.js";
import { startOpenAIServer, textTurn, type OpenAIServer } from "../../testing.js";

/**
 * The in-process handler's memory stays bounded: thousands of short runs through agentHandler (the
 * real openai client against the loopback model server), and the finished runs it holds never pass
 * `maxFinishedRuns`. Counted as entries (handler.held()), never as heap or time.
 */

let model: OpenAIServer | undefined;
let handler: AgentHandler | undefined;
afterEach(async () => {
  await handler?.close();
  await model?.close();
  handler = undefined;
  model = undefined;
});

async function start(options: Omit<AgentHandlerOptions, "agents">): Promise<AgentHandler> {
  model = await startOpenAIServer({ respond: () => textTurn("done"), keepRequests: false });
  const agent = createReactMachine({ name: "Short", modelClient: ModelClient.resolve({ baseURL: model.baseURL, apiKey: "test", model: "gpt-4o-mini" }), configFile: false });
  handler = agentHandler({ agents: { short: agent }, ...options });
  return handler;
}

/** Start a run and read its stream to the end; resolves with its id. */
async function runToEnd(h: AgentHandler, message: string): Promise<string> {
  const response = await h(new Request("http://app.local/runs", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ agent: "short", message }) }));
  expect(response.status).toBe(200);
  const body = await response.text();
  expect(body).toContain("event: run.finished");
  return response.headers.get("x-run-id")!;
}

async function push(h: AgentHandler, count: number, cap: number): Promise<string[]> {
  const ids: string[] = [];
  let most = 0;
  const lanes = Array.from({ length: 16 }, async (_, lane) => {
    for (let i = lane; i < count; i += 16) {
      ids[i] = await runToEnd(h, `task ${i}`);
      most = Math.max(most, h.held().finished);
    }
  });
  await Promise.all(lanes);
  expect(most).toBeGreaterThan(0);
  expect(most).toBeLessThanOrEqual(cap);
  return ids;
}

const get = (h: AgentHandler, runId: string) => h(new Request(`http://app.local/runs/${runId}`));

describe("finished runs held in memory are capped (maxFinishedRuns)", () => {
  it("without a store: 1,500 runs, never more than the cap held; an evicted run answers 410 run_expired, an unknown one 404", async () => {
    const h = await start({ store: false, maxFinishedRuns: 25 });
    const ids = await push(h, 1_500, 25);
    expect(h.held()).toEqual({ live: 0, finished: 25 });

    const evicted = await get(h, ids[1_000]!);
    expect(evicted.status).toBe(410);
    const body = ErrorBodySchema.parse(await evicted.json());
    expect(body.error.code).toBe("run_expired");
    expect(body.error.message).toMatch(/maxFinishedRuns/);
    const stream = await h(new Request(`http://app.local/runs/${ids[1_001]}/stream`));
    expect(stream.status).toBe(410);
    // The ids of expired runs are remembered in a bounded set too (the last 1,000): older ones are unknown.
    expect(ErrorBodySchema.parse(await (await get(h, ids[0]!)).json()).error.code).toBe("unknown_run");

    const recent = await get(h, ids.at(-1)!);
    expect(recent.status).toBe(200);
    expect(RunSnapshotSchema.parse(await recent.json()).status).toBe("succeeded");
    const never = ErrorBodySchema.parse(await (await get(h, "never-started")).json());
    expect(never.error.code).toBe("unknown_run");
  }, 120_000);

  it("with a checkpoint store: an evicted run is answered from its final checkpoint", async () => {
    const store = new MemoryCheckpointStore();
    const h = await start({ store, maxFinishedRuns: 10 });
    const ids = await push(h, 300, 10);
    expect(h.held().finished).toBe(10);
    const evicted = await get(h, ids[0]!);
    expect(evicted.status).toBe(200);
    expect(RunSnapshotSchema.parse(await evicted.json())).toMatchObject({ runId: ids[0], status: "succeeded" });
    // Read from the store, not held again.
    expect(h.held().finished).toBe(10);
  }, 60_000);

  it("retainFinishedMs still lets a finished run go by time", async () => {
    const h = await start({ store: false, retainFinishedMs: 50 });
    const id = await runToEnd(h, "one");
    expect(h.held().finished).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 120));
    expect(h.held().finished).toBe(0);
    expect((await get(h, id)).status).toBe(410);
  });
});
