import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createActor } from "xstate";
import { z } from "zod";
import { ai, human } from "../../actors/messages.js";
import type { ModelClient, ModelRequest } from "../../actors/model-client.js";
import { OUTPUT_CAP_EVERY_MODEL_TAKES } from "../../actors/spend.js";
import { checkpointAgent } from "../../machines/persistence/checkpoints/checkpoint-agent.js";
import { MemoryCheckpointStore } from "../../machines/persistence/checkpoints/memory-store.js";
import { forkRun } from "../../machines/persistence/log/fork.js";
import { restoreAgent } from "../../machines/persistence/persistence.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { scriptedModel } from "../../testing/scripted-model.js";
import type { OpenAIServer } from "../../testing/openai-server.js";
import { defineTool } from "../../tools/tool.js";
import { pricedServer, resumedOver, silentModel, USAGE, type RestoredOptions } from "./restored-spend.js";

/*
 * A run saved while it waited on a summary (Compacting, with `config.context` set to summarize) is
 * restored with the summary still to write: XState starts the compaction step again from its saved
 * input. With a budget, the summary the saved run's process asked for may have been billed: it counts
 * as a model call the saved run waited on does (restored-call-spend.test.ts). Before, the restored run
 * counted only the summary it asked for itself.
 *
 * And a fork: its fork point's step asked again was the original run's, but once a step of the fork
 * answered (a summary, a batch of tool calls, a reply), a call it is restored waiting on is its own.
 */

const BUDGET = { maxBudgetTokens: 100_000 };
const SUMMARIZE = { ...BUDGET, context: { maxTokens: 1, strategy: "summarize" as const, keepLast: 0 } };
/** An earlier exchange to summarize before the next question. */
const CONVERSATION = [human("What were the sales figures? ".repeat(20)), ai("They rose by a tenth. ".repeat(20)), human("And the costs?")];

let server: OpenAIServer;
beforeAll(async () => {
  server = await pricedServer();
});
afterAll(async () => {
  await server?.close();
});

const resumed = (options: RestoredOptions, saved: unknown, checkpoints?: MemoryCheckpointStore) => resumedOver(server, options, saved, checkpoints);

/** The most a call of this request may have been billed: its prompt as the budget sized it, and its cap. */
function boundOf(request: ModelRequest): number {
  return request.spend!.promptTokens + (request.maxTokens ?? OUTPUT_CAP_EVERY_MODEL_TAKES);
}

/**
 * A process that runs `runId` from `start`, checkpointing into `store`, until `stopWhen` holds and its
 * checkpoint is saved in state `savedIn`; then it stops as if it died.
 */
async function stoppedWhen(
  options: RestoredOptions & { modelClient: ModelClient },
  store: MemoryCheckpointStore,
  start: { runId: string; snapshot?: unknown; messages?: ReturnType<typeof human>[] },
  stopWhen: () => boolean,
  savedIn: string,
) {
  const machine = createReactMachine(options);
  const actor = start.snapshot
    ? createActor(machine, { snapshot: restoreAgent(machine, start.snapshot) })
    : createActor(machine, { input: { messages: start.messages ?? CONVERSATION, runId: start.runId } });
  checkpointAgent(actor, store);
  actor.start();
  await vi.waitFor(() => expect(stopWhen() && store.load(start.runId)?.state.includes(savedIn) === true).toBe(true), { timeout: 1000, interval: 5 });
  actor.stop();
  return store.load(start.runId)!;
}

describe("a summary the saved run was waiting on", () => {
  it("counts once more when the restored run asks for it again", async () => {
    const store = new MemoryCheckpointStore();
    const silent = silentModel();
    const saved = await stoppedWhen({ config: SUMMARIZE, modelClient: silent.client }, store, { runId: "run-1" }, () => silent.requests.length === 1, "Compacting");
    expect(saved.state).toContain("Compacting");
    const lostSummary = silent.requests[0]!;
    expect(lostSummary.tools).toEqual([]);

    const { output, terminated, sent } = await resumed({ config: SUMMARIZE }, saved);
    expect(output.status).toBe("succeeded");
    // The summary asked again and the reply: both reported their usage; the lost summary did not.
    expect(sent).toHaveLength(2);
    expect(output.usage.totalTokens).toBe(2 * USAGE.total_tokens);
    expect(terminated?.unreported?.tokens).toBe(boundOf(lostSummary));
  });

  it("leaves the summary asked again only what the lost one left: refused without a request when that is too little", async () => {
    const probe = silentModel();
    await stoppedWhen({ config: SUMMARIZE, modelClient: probe.client }, new MemoryCheckpointStore(), { runId: "probe" }, () => probe.requests.length === 1, "Compacting");
    // Room for one summary of this prompt and cap, not for two.
    const tight = { ...SUMMARIZE, maxBudgetTokens: boundOf(probe.requests[0]!) + 100 };
    const silent = silentModel();
    const saved = await stoppedWhen({ config: tight, modelClient: silent.client }, new MemoryCheckpointStore(), { runId: "run-2" }, () => silent.requests.length === 1, "Compacting");

    const { output, terminated, sent } = await resumed({ config: tight }, saved);
    expect(sent).toEqual([]);
    expect(output.termination).toMatchObject({ reason: "tokenBudget" });
    expect(terminated?.unreported?.tokens).toBe(boundOf(silent.requests[0]!));
  });

  it("is the original run's, not a fork's started at that checkpoint", async () => {
    const store = new MemoryCheckpointStore();
    const silent = silentModel();
    await stoppedWhen({ config: SUMMARIZE, modelClient: silent.client }, store, { runId: "run-3" }, () => silent.requests.length === 1, "Compacting");
    const forkId = await forkRun(store, "run-3", { from: store.history("run-3").at(-1)!.checkpointId });
    expect(store.load(forkId)!.state).toContain("Compacting");

    const { output, terminated } = await resumed({ config: SUMMARIZE }, store.load(forkId)!, store);
    expect(output.status).toBe("succeeded");
    expect(terminated).not.toHaveProperty("unreported");
    expect(JSON.stringify(store.load(forkId)!.snapshot)).not.toContain("forkPoint");
  });

  it("counts nothing without a budget", async () => {
    const unbudgeted = { context: SUMMARIZE.context };
    const silent = silentModel();
    const saved = await stoppedWhen({ config: unbudgeted, modelClient: silent.client }, new MemoryCheckpointStore(), { runId: "run-4" }, () => silent.requests.length === 1, "Compacting");
    const { output, terminated } = await resumed({ config: unbudgeted }, saved);
    expect(output.status).toBe("succeeded");
    expect(terminated).not.toHaveProperty("unreported");
  });
});

describe("a fork started while its tools ran", () => {
  it("owns the model call after its tool batch: restored waiting on it, the fork counts it", async () => {
    const store = new MemoryCheckpointStore();
    const slow = defineTool({ name: "lookup", description: "Look something up.", parameters: z.object({}), execute: () => new Promise<string>(() => undefined) });
    const quick = defineTool({ name: "lookup", description: "Look something up.", parameters: z.object({}), execute: () => "found it" });
    const model = scriptedModel([{ toolCalls: [{ id: "c1", name: "lookup", arguments: {} }], usage: { promptTokens: 10, completionTokens: 2 } }], { model: "priced-model" });
    await stoppedWhen({ config: BUDGET, tools: [slow], modelClient: model }, store, { runId: "run-5", messages: [human("Look it up.")] }, () => true, "Executing");
    const forkId = await forkRun(store, "run-5", { from: store.history("run-5").at(-1)!.checkpointId });
    expect(store.load(forkId)!.state).toContain("Executing");

    // The fork runs its batch, then waits on its own model call when its process stops.
    const silent = silentModel();
    const waiting = await stoppedWhen({ config: BUDGET, tools: [quick], modelClient: silent.client }, store, { runId: forkId, snapshot: store.load(forkId)! }, () => silent.requests.length === 1, "AgentLLM");
    expect(waiting.state).toContain("AgentLLM");
    expect(JSON.stringify(waiting.snapshot)).not.toContain("forkPoint");

    const { output, terminated } = await resumed({ config: BUDGET, tools: [quick] }, waiting);
    expect(output.status).toBe("succeeded");
    expect(terminated?.unreported?.tokens).toBe(boundOf(silent.requests[0]!));
  });
});
