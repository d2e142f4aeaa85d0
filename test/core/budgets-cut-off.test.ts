import { afterAll, describe, expect, it, vi } from "vitest";
import { createActor } from "xstate";
import { defineGuardrail } from "../../actors/guardrail.js";
import { ai, human, type Message } from "../../actors/messages.js";
import type { ModelClient, ModelRequest } from "../../actors/model-client.js";
import { resolveModelClient } from "../../actors/openai/openai-model-client.js";
import { OUTPUT_CAP_EVERY_MODEL_TAKES } from "../../actors/spend.js";
import type { AgentEmitted } from "../../machines/contract/events.js";
import { agentTool } from "../../machines/composition/agent-tool.js";
import { createReactMachine, type ReactMachineOptions } from "../../machines/react-machine.js";
import { scriptedModel } from "../../testing/scripted-model.js";
import { replies, startOpenAIServer, type OpenAIServer, type ReceivedRequest } from "../../testing/openai-server.js";

/*
 * A run that ends while its model call is under way (a cancel, its deadline) never hears what the
 * call cost: the call is cut off, its outcome dropped. With a budget it counts all the same, as an
 * attempt that failed without a word does (its prompt and its cap; actors/call-meter.ts), so that
 * what a run reports having spent bounds what it may have been billed. Before, such a call counted
 * nothing. An attempt the server refused with a status is billed nothing and counts nothing.
 */

const PRICING = { "priced-model": { input: 1, output: 4 } };
const servers: OpenAIServer[] = [];
const held: (() => void)[] = [];
afterAll(async () => {
  for (const release of held) release();
  await Promise.all(servers.map((server) => server.close()));
});

/** A server that never answers (until the file ends), but with a 500 to the requests `failing` names. */
async function silentServer(failing: ReadonlySet<number> = new Set()): Promise<OpenAIServer> {
  const server = await startOpenAIServer({
    respond: (request: ReceivedRequest) =>
      failing.has(request.index) ? replies.error(500, "scripted server error") : new Promise((resolve) => held.push(() => resolve(replies.error(503, "gone")))),
    keepRequests: true,
  });
  servers.push(server);
  return server;
}

/** The real client over the loopback server, keeping each request as the LLM step hands it over. */
function capturing(server: OpenAIServer, retries: number): { client: ModelClient; requests: ModelRequest[] } {
  const inner = resolveModelClient({ baseURL: server.baseURL, apiKey: "test-key", model: "priced-model", stream: false, resilience: { maxRetries: retries, initialDelayMs: 1, maxDelayMs: 2, jitter: 0 } });
  const requests: ModelRequest[] = [];
  return { requests, client: { description: inner.description, model: "priced-model", complete: (request, options) => (requests.push(request), inner.complete(request, options)) } };
}

/** How long a test waits for the agent to reach a point (vi.waitFor, polling every 5 ms). */
const WAIT = { timeout: 2500, interval: 5 };

/** One attempt's bound: the prompt as the budget sized it, and the cap it sent (or, with none, the cap every model takes). */
function boundOf(request: ModelRequest) {
  const promptTokens = request.spend!.promptTokens;
  const cap = request.maxTokens ?? OUTPUT_CAP_EVERY_MODEL_TAKES;
  return { tokens: promptTokens + cap, cost: (promptTokens * 1 + cap * 4) / 1_000_000 };
}

/** Starts the agent, waits until the server has `requests` of its attempts, then `end`s it; resolves with what it announced at its end. */
async function cutOff(options: Omit<ReactMachineOptions, "modelClient">, server: OpenAIServer, client: ModelClient, requests: number, end?: (actor: { send: (event: { type: "agent.cancel" }) => void }) => void) {
  const actor = createActor(createReactMachine({ ...options, modelClient: client }), { input: { messages: [human("Summarise the quarter. ".repeat(30))] } });
  const events: AgentEmitted[] = [];
  actor.on("*", (event) => events.push(event as AgentEmitted));
  actor.start();
  await vi.waitFor(() => expect(server.requests).toHaveLength(requests), WAIT);
  end?.(actor);
  await vi.waitFor(() => expect(actor.getSnapshot().status).toBe("done"), WAIT);
  return { output: actor.getSnapshot().output!, terminated: events.find((e): e is Extract<AgentEmitted, { type: "loop.terminated" }> => e.type === "loop.terminated")! };
}

/** Starts `machine`, waits for `ready`, checks `before` on the actor, cancels it; resolves with its own loop.terminated. */
async function cutOffWithin(
  machine: ReturnType<typeof createReactMachine>,
  ready: () => boolean,
  before?: (actor: ReturnType<typeof createActor<ReturnType<typeof createReactMachine>>>) => void,
  messages: Message[] = [human("Summarise the quarter. ".repeat(30))],
) {
  const actor = createActor(machine, { input: { messages } });
  const ends: AgentEmitted[] = [];
  actor.on("loop.terminated", (event) => ends.push(event));
  actor.start();
  await vi.waitFor(() => expect(ready()).toBe(true), WAIT);
  before?.(actor);
  actor.send({ type: "agent.cancel" });
  return { actor, terminated: ends.find((event) => event.type === "loop.terminated" && event.agentPath === undefined) };
}

describe("a model call cut off by the run's end", () => {
  it("counts at its prompt and its cap when the run is cancelled mid-call", async () => {
    const server = await silentServer();
    const { client, requests } = capturing(server, 0);
    const { output, terminated } = await cutOff({ config: { maxBudgetTokens: 100_000, maxBudgetCost: 5, maxTokens: 500, pricing: PRICING } }, server, client, 1, (actor) =>
      actor.send({ type: "agent.cancel" }),
    );
    expect(output.termination).toMatchObject({ reason: "cancelled" });
    const bound = boundOf(requests[0]!);
    expect(bound.tokens).toBeGreaterThan(500);
    expect(terminated.unreported?.tokens).toBe(bound.tokens);
    expect(terminated.unreported?.cost).toBeCloseTo(bound.cost, 12);
  });

  it("counts the same when the run's deadline cuts it off", async () => {
    const server = await silentServer();
    const { client, requests } = capturing(server, 0);
    const { output, terminated } = await cutOff({ config: { maxBudgetTokens: 100_000, maxTokens: 500, maxDurationMs: 300 } }, server, client, 1);
    expect(output.termination).toMatchObject({ reason: "deadline" });
    expect(terminated.unreported?.tokens).toBe(boundOf(requests[0]!).tokens);
  });

  it("counts the attempt cut off, not the one the server refused with a status before it", async () => {
    const server = await silentServer(new Set([0]));
    const { client, requests } = capturing(server, 1);
    const { terminated } = await cutOff({ config: { maxBudgetTokens: 100_000, maxTokens: 500 } }, server, client, 2, (actor) => actor.send({ type: "agent.cancel" }));
    expect(server.requests).toHaveLength(2);
    expect(terminated.unreported?.tokens).toBe(boundOf(requests[0]!).tokens);
  });

  it("counts a nested agent's call under way when its caller is cancelled (the nested agent never reports it)", async () => {
    const requests: ModelRequest[] = [];
    const silent: ModelClient = { description: "a model that never answers", model: "priced-model", complete: (request) => (requests.push(request), new Promise(() => undefined)) };
    const writer = createReactMachine({ name: "Writer", modelClient: silent, configFile: false, config: { maxTokens: 300 } });
    const caller = createReactMachine({
      name: "Researcher",
      modelClient: scriptedModel([{ toolCalls: [{ id: "r1", name: "ask_writer", arguments: { input: "Draft the summary. ".repeat(20) } }], usage: { promptTokens: 100, completionTokens: 10 } }]),
      tools: [agentTool(writer, { name: "ask_writer", description: "Ask the writer agent" })],
      configFile: false,
      config: { maxBudgetTokens: 100_000 },
    });
    const actor = createActor(caller, { input: { messages: [human("Ask the writer for a summary")] } });
    const ends: AgentEmitted[] = [];
    actor.on("loop.terminated", (event) => ends.push(event));
    actor.start();
    await vi.waitFor(() => expect(requests).toHaveLength(1), WAIT);
    actor.send({ type: "agent.cancel" });
    expect(actor.getSnapshot().status).toBe("done");
    const own = ends.find((event) => event.type === "loop.terminated" && event.agentPath === undefined);
    expect(requests[0]!.maxTokens).toBe(300);
    expect(own).toMatchObject({ reason: "cancelled", unreported: { tokens: boundOf(requests[0]!).tokens } });
  });

  it("counts a judge's calls when the run is cancelled before the guardrail's verdict: the one answered and the one under way", async () => {
    const requests: ModelRequest[] = [];
    const judge: ModelClient = {
      description: "a judge that answers once, then never",
      model: "priced-model",
      complete: (request) => (requests.push(request), requests.length === 1 ? Promise.resolve({ content: "noted", toolCalls: [], finishReason: "stop", usage: { promptTokens: 30, completionTokens: 3, totalTokens: 33 }, model: "priced-model" }) : new Promise(() => undefined)),
    };
    const twice = defineGuardrail({
      name: "twice",
      async check(subject, ctx) {
        await ctx.budgeted(judge).complete({ messages: [human(`Judge: ${subject.text}`)], tools: [], maxTokens: 200 }, { signal: ctx.signal });
        await ctx.budgeted(judge).complete({ messages: [human(`Judge again: ${subject.text}`)], tools: [], maxTokens: 200 }, { signal: ctx.signal });
        return { verdict: "pass" };
      },
    });
    const machine = createReactMachine({ modelClient: scriptedModel([{ content: "an answer", usage: { promptTokens: 10, completionTokens: 1 } }]), outputGuardrails: [twice], config: { maxBudgetTokens: 100_000 }, configFile: false });
    const { terminated } = await cutOffWithin(machine, () => requests.length === 2);
    expect(terminated).toMatchObject({ reason: "cancelled", usage: { totalTokens: 11 }, unreported: { tokens: 33 + boundOf(requests[1]!).tokens } });
  });

  it("counts a summary under way when the run is cancelled while it compacts", async () => {
    const requests: ModelRequest[] = [];
    const silent: ModelClient = { description: "a model that never answers", model: "priced-model", complete: (request) => (requests.push(request), new Promise(() => undefined)) };
    const machine = createReactMachine({ modelClient: silent, config: { maxBudgetTokens: 100_000, context: { maxTokens: 1, strategy: "summarize", keepLast: 0 } }, configFile: false });
    const { actor, terminated } = await cutOffWithin(machine, () => requests.length === 1, (a) => expect(JSON.stringify(a.getSnapshot().value)).toContain("Compacting"),
      // An earlier exchange to summarize before the next question.
      [human("What were the sales figures? ".repeat(20)), ai("They rose by a tenth. ".repeat(20)), human("And the costs?")],
    );
    expect(actor.getSnapshot().status).toBe("done");
    expect(terminated).toMatchObject({ reason: "cancelled", unreported: { tokens: boundOf(requests[0]!).tokens } });
  });

  it("counts nothing without a budget", async () => {
    const server = await silentServer();
    const { client } = capturing(server, 0);
    const { output, terminated } = await cutOff({}, server, client, 1, (actor) => actor.send({ type: "agent.cancel" }));
    expect(output.termination).toMatchObject({ reason: "cancelled" });
    expect(terminated).not.toHaveProperty("unreported");
  });
});
