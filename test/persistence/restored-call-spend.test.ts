import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createActor } from "xstate";
import { human } from "../../actors/messages.js";
import type { ModelRequest } from "../../actors/model-client.js";
import { resolveModelClient } from "../../actors/openai/openai-model-client.js";
import { checkpointAgent } from "../../machines/persistence/checkpoints/checkpoint-agent.js";
import { MemoryCheckpointStore } from "../../machines/persistence/checkpoints/memory-store.js";
import { forkRun } from "../../machines/persistence/log/fork.js";
import type { AgentEmitted } from "../../machines/contract/events.js";
import { restoreAgent } from "../../machines/persistence/persistence.js";
import { createReactMachine, type ReactMachineOptions } from "../../machines/react-machine.js";
import { runAgent } from "../../machines/runner.js";
import type { OpenAIServer } from "../../testing/openai-server.js";
import { pricedServer, resumedOver, silentModel, USAGE } from "./restored-spend.js";

/*
 * A process stopped while its run waited on a model reply (a crash, a worker killed or stopping)
 * may have made the call, and been billed for it, without anyone hearing back. The run restored
 * from its checkpoint in AgentLLM makes the call again: the lost one counts too, as an attempt that
 * failed without a word does (its prompt and its cap), so that a run resumed again and again cannot
 * spend past its budget uncounted. Before, the restored run counted the call it made, only.
 */

const PRICING = { "priced-model": { input: 1, output: 4 } };
let server: OpenAIServer;
beforeAll(async () => {
  server = await pricedServer();
});
afterAll(async () => {
  await server?.close();
});

type Options = Pick<ReactMachineOptions, "config">;

/** The first process: its model never answers; it is stopped (as if it died) once the run waits on the reply, checkpointed in AgentLLM. */
async function stoppedWaitingOnReply(options: Options) {
  const store = new MemoryCheckpointStore();
  const silent = silentModel();
  const actor = createActor(createReactMachine({ ...options, modelClient: silent.client }), { input: { messages: [human("Summarise the quarter. ".repeat(40))], runId: "run-1" } });
  checkpointAgent(actor, store);
  actor.start();
  await new Promise((resolve) => setTimeout(resolve, 20));
  actor.stop();
  expect(store.load("run-1")!.state).toBe("Evaluating.ChildRunning.AgentLLM");
  expect(silent.requests).toHaveLength(1);
  return { store, saved: store.load("run-1")!, lostCall: silent.requests[0]! };
}

/** The second process: the same agent over the loopback server, restored from the checkpoint. */
const resumed = (options: Options, saved: unknown, checkpoints?: MemoryCheckpointStore) => resumedOver(server, options, saved, checkpoints);

/** What the lost call may have cost: its prompt as the budget sized it, and its cap as the budget capped it. */
function boundOf(request: ModelRequest) {
  const promptTokens = request.spend!.promptTokens;
  const completionTokens = request.maxTokens!;
  return { tokens: promptTokens + completionTokens, cost: (promptTokens * 1 + completionTokens * 4) / 1_000_000 };
}

describe("a model call the saved run was waiting on", () => {
  it("counts once more when the restored run makes it again: its prompt and its cap, beside what the new call reported", async () => {
    const options: Options = { config: { maxBudgetTokens: 100_000, maxBudgetCost: 10, maxTokens: 500, pricing: PRICING } };
    const { saved, lostCall } = await stoppedWaitingOnReply(options);
    const lost = boundOf(lostCall);
    expect(lostCall.maxTokens).toBe(500);
    expect(lost.tokens).toBeGreaterThan(500);

    const { output, terminated } = await resumed(options, saved);
    expect(output.status).toBe("succeeded");
    expect(output.usage.totalTokens).toBe(USAGE.total_tokens);
    expect(terminated?.unreported?.tokens).toBe(lost.tokens);
    expect(terminated?.unreported?.cost).toBeCloseTo(lost.cost, 12);
  });

  it("leaves the call made again only what the lost one left: it is refused when that is too little, without a request", async () => {
    // Room for one call of this prompt and cap, not for two.
    const probe = await stoppedWaitingOnReply({ config: { maxBudgetTokens: 100_000, maxTokens: 500 } });
    const options: Options = { config: { maxBudgetTokens: boundOf(probe.lostCall).tokens + 100, maxTokens: 500 } };
    const { saved, lostCall } = await stoppedWaitingOnReply(options);

    const { output, terminated, sent } = await resumed(options, saved);
    expect(sent).toEqual([]);
    expect(output.status).toBe("failed");
    expect(output.termination).toMatchObject({ reason: "tokenBudget" });
    expect(terminated?.unreported?.tokens).toBe(boundOf(lostCall).tokens);
  });

  it("still counts when the call made again is cut off too (the run cancelled mid-call)", async () => {
    const options: Options = { config: { maxBudgetTokens: 100_000, maxTokens: 500 } };
    const { saved, lostCall } = await stoppedWaitingOnReply(options);
    const { client: silent, requests } = silentModel();
    const machine = createReactMachine({ ...options, modelClient: silent });
    const actor = createActor(machine, { snapshot: restoreAgent(machine, saved) });
    const events: AgentEmitted[] = [];
    actor.on("loop.terminated", (event) => events.push(event));
    actor.start();
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(requests).toHaveLength(1);
    actor.send({ type: "agent.cancel" });
    // The lost call, and the one made again: the budget left it as much as before less the lost one.
    expect(requests[0]!.spend!.tokens).toBe(100_000 - boundOf(lostCall).tokens);
    expect(events[0]).toMatchObject({ reason: "cancelled", unreported: { tokens: boundOf(lostCall).tokens + boundOf(requests[0]!).tokens } });
  });

  /*
   * A fork started at such a checkpoint asks for the call too, but the call the saved run may have made
   * was the original run's (counted there when it goes on): the fork is not charged for it. From its
   * first reply on, a call it is restored waiting on is its own, and counts as above.
   */
  it("is the original run's, not a fork's started at that checkpoint", async () => {
    const options: Options = { config: { maxBudgetTokens: 100_000, maxTokens: 500 } };
    const { store } = await stoppedWaitingOnReply(options);
    const forkId = await forkRun(store, "run-1", { from: store.history("run-1").at(-1)!.checkpointId });
    const forkPoint = store.load(forkId)!;
    expect(forkPoint.state).toBe("Evaluating.ChildRunning.AgentLLM");

    const { output, terminated, sent } = await resumed(options, forkPoint, store);
    expect(output.status).toBe("succeeded");
    expect(sent).toHaveLength(1);
    expect(terminated).not.toHaveProperty("unreported");
    // The fork's own reply came: its later checkpoints no longer say it stands at the fork point.
    expect(JSON.stringify(store.load(forkId)!.snapshot)).not.toContain("forkPoint");
  });

  it("is not counted twice by a run that was never stopped, nor without a budget", async () => {
    const fresh = createReactMachine({
      config: { maxBudgetTokens: 100_000, maxTokens: 500 },
      modelClient: resolveModelClient({ baseURL: server.baseURL, apiKey: "test-key", model: "priced-model", stream: false, resilience: { maxRetries: 0 } }),
    });
    const events: AgentEmitted[] = [];
    const output = await runAgent(fresh, { messages: [human("Summarise the quarter.")] }, { onEvent: (event) => events.push(event) });
    expect(output.status).toBe("succeeded");
    expect(events.find((event) => event.type === "loop.terminated")).not.toHaveProperty("unreported");

    const { saved } = await stoppedWaitingOnReply({});
    const { output: unbudgeted, terminated } = await resumed({}, saved);
    expect(unbudgeted.status).toBe("succeeded");
    expect(terminated).not.toHaveProperty("unreported");
  });
});
