import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { human } from "../../actors/messages.js";
import { resolveModelClient } from "../../actors/openai/openai-model-client.js";
import { agentTool } from "../../machines/composition/agent-tool.js";
import { createReactMachine } from "../../machines/react-machine.js";
import type { AgentEmitted } from "../../machines/contract/events.js";
import { runAgent } from "../../machines/runner.js";
import { replies, startOpenAIServer, type OpenAIServer, type ReceivedRequest } from "../../testing/openai-server.js";
import { add } from "./helpers.js";

/**
 * Issue 33, point 1: budgets that cannot be crossed. The loopback server answers like a model that
 * honours `max_tokens` (it writes at most that many tokens) but always wants to write more; its
 * prompt counts stay below any estimate of the prompt. Whatever the wish, the spent total stays
 * within the budget, also when a caller runs two nested agents from one reply (the chart runs them one at a time, each granted what is left).
 */

const servers: OpenAIServer[] = [];
afterAll(async () => {
  await Promise.all(servers.map((server) => server.close()));
});

const PROMPT_TOKENS = 3;

/** A reply calling `add` (so the run goes on) with `wish` completion tokens, cut to the request's cap (unless `ignoresCap`: a model that does not honour it). */
function honouringReply(request: ReceivedRequest, wish: number, ignoresCap = false) {
  const body = request.body as { model?: string; max_tokens?: number; max_completion_tokens?: number };
  const cap = ignoresCap ? undefined : (body.max_completion_tokens ?? body.max_tokens);
  const completion = cap === undefined ? wish : Math.min(wish, cap);
  return replies.json({
    id: `chatcmpl-${request.index}`,
    object: "chat.completion",
    created: 0,
    model: body.model ?? "priced-model",
    choices: [
      {
        index: 0,
        finish_reason: completion < wish ? "length" : "tool_calls",
        message: { role: "assistant", content: null, tool_calls: [{ id: `call_${request.index}`, type: "function", function: { name: "add", arguments: '{"a":1,"b":2}' } }] },
      },
    ],
    usage: { prompt_tokens: PROMPT_TOKENS, completion_tokens: completion, total_tokens: PROMPT_TOKENS + completion },
  });
}

/** `failing`: which requests (by index) fail with a 500, so that the client retries or falls back. */
async function greedyServer(wishes: readonly number[], failing: ReadonlySet<number> = new Set(), ignoresCap = false): Promise<OpenAIServer> {
  const server = await startOpenAIServer({
    // A failure and the request after it: the retry fails too, so the client falls back.
    respond: (request) =>
      failing.has(request.index) || failing.has(request.index - 1) ? replies.error(500, "scripted server error") : honouringReply(request, wishes[request.index % wishes.length]!, ignoresCap),
    keepRequests: true,
  });
  servers.push(server);
  return server;
}

// The fallback is dearer: an attempt on it must be capped at its own price.
const pricing = { "priced-model": { input: 1, output: 4 }, "backup-model": { input: 3, output: 12 } };

/** `retries`: with a retry and a fallback model, tried after failed attempts. */
function clientOf(server: OpenAIServer, retries = false) {
  const resilience = retries ? { maxRetries: 1, initialDelayMs: 1, maxDelayMs: 2, jitter: 0 } : { maxRetries: 0 };
  return resolveModelClient({ baseURL: server.baseURL, apiKey: "test-key", model: "priced-model", stream: false, resilience, ...(retries ? { fallbacks: [{ model: "backup-model" }] } : {}) });
}

/** A caller's server: its first reply asks the helper `asks` times, the others call `add`. */
async function askingServer(asks: number): Promise<OpenAIServer> {
  const server = await startOpenAIServer({
    respond: (request) =>
      request.index === 0
        ? replies.json({
            id: "chatcmpl-caller",
            object: "chat.completion",
            created: 0,
            model: "priced-model",
            choices: [
              {
                index: 0,
                finish_reason: "tool_calls",
                message: {
                  role: "assistant",
                  content: null,
                  tool_calls: Array.from({ length: asks }, (_, n) => ({ id: `ask_${n + 1}`, type: "function", function: { name: "ask_helper", arguments: JSON.stringify({ input: `task ${n + 1}` }) } })),
                },
              },
            ],
            usage: { prompt_tokens: PROMPT_TOKENS, completion_tokens: 10, total_tokens: PROMPT_TOKENS + 10 },
          })
        : honouringReply(request, 50),
  });
  servers.push(server);
  return server;
}

describe("budgets that hold", () => {
  it("spent tokens and cost never exceed the budgets, whatever the model wants to write, with retries and a dearer fallback (property)", async () => {
    let fellBack = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 200, max: 3_000 }),
        fc.array(fc.integer({ min: 1, max: 2_000 }), { minLength: 1, maxLength: 5 }),
        fc.uniqueArray(fc.integer({ min: 0, max: 12 }), { maxLength: 6 }),
        fc.boolean(),
        async (tokens, wishes, failing, retries) => {
        const server = await greedyServer(wishes, retries ? new Set(failing) : new Set());
        const cost = (3 * tokens) / 1_000_000;
        const machine = createReactMachine({ modelClient: clientOf(server, retries), tools: [add], config: { maxIterations: 50, maxBudgetTokens: tokens, maxBudgetCost: cost, pricing }, configFile: false });
        const output = await runAgent(machine, { messages: [human("add forever")] });
        expect(output.status).toBe("failed");
        // A run whose attempts all failed ends on the model error; every other one on a budget.
        expect(["tokenBudget", "costBudget", "modelError"]).toContain(output.termination?.reason);
        expect(output.usage.totalTokens).toBeLessThanOrEqual(tokens);
        // No cost only when no call was made (the prompt alone would have crossed a budget).
        if (server.requests.length > 0) expect(output.usage.cost).toBeTypeOf("number");
        expect(output.usage.cost ?? 0).toBeLessThanOrEqual(cost);
        fellBack += server.requests.filter((request) => (request.body as { model?: string }).model === "backup-model").length;
        await server.close();
        },
      ),
      { numRuns: 12, seed: 33 },
    );
    // The fallback was really tried (the seed fixes which runs fail over).
    expect(fellBack).toBeGreaterThan(0);
  });

  it("two nested agents from one reply (run one after the other) stay within what their caller had left", async () => {
    const server = await greedyServer([900]);
    const helper = createReactMachine({ name: "Helper", modelClient: clientOf(server), tools: [add], config: { maxIterations: 50 }, configFile: false });
    const callerServer = await askingServer(2);
    const budget = 2_000;
    const caller = createReactMachine({
      name: "Caller",
      modelClient: clientOf(callerServer),
      tools: [agentTool(helper, { name: "ask_helper", description: "Ask the helper" })],
      config: { maxIterations: 10, maxBudgetTokens: budget },
      configFile: false,
    });
    const output = await runAgent(caller, { messages: [human("ask the helper twice")] });
    // Both helpers ran (each made calls), and together with the caller they spent no more than the budget.
    expect(server.requests.length).toBeGreaterThanOrEqual(2);
    expect(output.usage.totalTokens).toBeLessThanOrEqual(budget);
    // ...and they did try to spend it all: each helper alone wanted more than half of it.
    expect(output.usage.totalTokens, JSON.stringify(output.usage)).toBeGreaterThan(budget / 2);
  });

  // The helper has no budget of its own: the grant from its caller is its budget, and reaching it ends
  // the helper on that budget (not on a model error), whether a call is refused before it is made (a
  // model that honours max_tokens) or a reply already crossed it (one that does not: CheckAbort ends it).
  it.each([
    { budget: "tokenBudget", ignoresCap: false },
    { budget: "tokenBudget", ignoresCap: true },
    { budget: "costBudget", ignoresCap: false },
    { budget: "costBudget", ignoresCap: true },
  ] as const)("a nested agent without budgets of its own ends $budget when its caller's grant runs out (model ignores max_tokens: $ignoresCap)", async ({ budget, ignoresCap }) => {
    const server = await greedyServer([ignoresCap ? 5_000 : 900], new Set(), ignoresCap);
    const helper = createReactMachine({ name: "Helper", modelClient: clientOf(server), tools: [add], config: { maxIterations: 50, pricing }, configFile: false });
    // 2,000 tokens, or what 1,000 output tokens of the main model cost.
    const budgets = budget === "tokenBudget" ? { maxBudgetTokens: 2_000 } : { maxBudgetCost: 0.004 };
    const caller = createReactMachine({
      name: "Caller",
      modelClient: clientOf(await askingServer(1)),
      tools: [agentTool(helper, { name: "ask_helper", description: "Ask the helper" })],
      config: { maxIterations: 10, pricing, ...budgets },
      configFile: false,
    });
    const ends: Extract<AgentEmitted, { type: "loop.terminated" }>[] = [];
    const output = await runAgent(caller, { messages: [human("ask the helper")] }, { onEvent: (event) => event.type === "loop.terminated" && ends.push(event) });
    expect(server.requests.length).toBeGreaterThan(0);
    expect(ends.find((end) => end.agent === "Helper"), JSON.stringify(ends)).toMatchObject({ status: "failed", reason: budget });
    expect(output).toMatchObject({ status: "failed", termination: { reason: budget } });
    // A model that honours max_tokens never takes the caller past its budget.
    if (!ignoresCap) {
      if (budget === "tokenBudget") expect(output.usage.totalTokens).toBeLessThanOrEqual(2_000);
      else expect(output.usage.cost).toBeLessThanOrEqual(0.004);
    }
  });

  it("a nested agent without a price for its model cannot keep within a cost grant: it ends costBudget without calling its model", async () => {
    const server = await greedyServer([900]);
    const helper = createReactMachine({ name: "Helper", modelClient: clientOf(server), tools: [add], config: { maxIterations: 50 }, configFile: false });
    const caller = createReactMachine({
      name: "Caller",
      modelClient: clientOf(await askingServer(1)),
      tools: [agentTool(helper, { name: "ask_helper", description: "Ask the helper" })],
      config: { maxIterations: 2, pricing, maxBudgetCost: 0.004 },
      configFile: false,
    });
    const ends: Extract<AgentEmitted, { type: "loop.terminated" }>[] = [];
    await runAgent(caller, { messages: [human("ask the helper")] }, { onEvent: (event) => event.type === "loop.terminated" && ends.push(event) });
    expect(ends.find((end) => end.agent === "Helper")).toMatchObject({ status: "failed", reason: "costBudget" });
    expect(server.requests).toHaveLength(0);
  });
});
