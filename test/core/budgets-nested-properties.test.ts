import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { human } from "../../actors/messages.js";
import { resolveModelClient } from "../../actors/openai/openai-model-client.js";
import { costAt } from "../../actors/pricing.js";
import { OUTPUT_CAP_EVERY_MODEL_TAKES } from "../../actors/spend.js";
import { agentTool } from "../../machines/composition/agent-tool.js";
import type { AgentEmitted } from "../../machines/contract/events.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { runAgent } from "../../machines/runner.js";
import { replies, startOpenAIServer, type OpenAIServer, type ReceivedRequest, type Reply } from "../../testing/openai-server.js";
import { add } from "./helpers.js";

/**
 * Issue 33, point 1, all together: a caller with a token budget, a cost budget or both runs random
 * scripts in which one reply may call a nested agent up to three times, every agent (the caller
 * and its helpers) may summarize its conversation (`config.context`, strategy `summarize`), and
 * requests fail at random: with a 500 (the client retries, then falls back to a dearer model) or
 * with a dropped connection (which may have been billed). The loopback server honours `max_tokens`
 * but always wants to write more than it is allowed.
 *
 * What is checked is counted on the server's side, not by the agent: the usage of every reply it
 * sent, plus, for every connection it dropped, the prompt and the whole cap (what a server may bill
 * for a request it processed without answering). That total stays within the caller's budgets,
 * however the nested agents are called: several in one reply share what the caller has left.
 */

const servers: OpenAIServer[] = [];
afterAll(async () => {
  await Promise.all(servers.map((server) => server.close()));
});

// The fallback is dearer: an attempt on it must be capped at its own price.
const pricing = { "priced-model": { input: 1, output: 4 }, "backup-model": { input: 3, output: 12 } };

interface Script {
  /** Completion tokens each reply wants to write (cycled). */
  wishes: number[];
  /** How many times each caller reply calls the helper (cycled; 0: it calls `add`). */
  agentCalls: number[];
  /** Which requests fail, and how. */
  faults: Map<number, "error" | "drop">;
  /** The helper answers in text (and so ends) on every n-th of its replies; 0: never. */
  helperEndsEvery: number;
}

interface Bill {
  tokens: number;
  cost: number;
  /** What each kind of request the server saw, to check that the cases reach what they are about. */
  seen: Set<string>;
}

type Body = { model?: string; max_tokens?: number; max_completion_tokens?: number; tools?: { function: { name: string } }[] };

/** The prompt as the server counts it: fewer tokens than the request has bytes, and than the agent's estimate. */
const promptOf = (request: ReceivedRequest) => Math.ceil(request.rawBody.length / 10);

function toolCalls(request: ReceivedRequest, name: string, count: number) {
  return Array.from({ length: count }, (_, n) => ({
    id: `call_${request.index}_${n}`,
    type: "function",
    function: { name, arguments: name === "add" ? '{"a":1,"b":2}' : JSON.stringify({ input: `task ${request.index}.${n}` }) },
  }));
}

/** One request answered as the script says, billed as the server would bill it. */
function respond(script: Script, bill: Bill, helperReplies: { n: number }, request: ReceivedRequest): Reply {
  const body = request.body as Body;
  const model = body.model ?? "priced-model";
  const cap = body.max_completion_tokens ?? body.max_tokens;
  const prompt = promptOf(request);
  const tools = (body.tools ?? []).map((tool) => tool.function.name);
  const who = tools.length === 0 ? "summary" : tools.includes("ask_helper") ? "caller" : "helper";
  bill.seen.add(who);
  if (model === "backup-model") bill.seen.add("fallback");
  const charge = (completion: number) => {
    bill.tokens += prompt + completion;
    bill.cost += costAt(pricing[model as keyof typeof pricing], { promptTokens: prompt, completionTokens: completion, totalTokens: prompt + completion });
  };
  const fault = script.faults.get(request.index);
  if (fault === "error") return replies.error(500, "scripted server error");
  if (fault === "drop") {
    bill.seen.add("drop");
    charge(cap ?? OUTPUT_CAP_EVERY_MODEL_TAKES);
    return replies.destroy();
  }
  const wish = script.wishes[request.index % script.wishes.length]!;
  const completion = cap === undefined ? wish : Math.min(wish, cap);
  charge(completion);
  let message: Record<string, unknown>;
  if (who === "summary") message = { role: "assistant", content: `summary ${request.index}` };
  else if (who === "helper" && script.helperEndsEvery > 0 && ++helperReplies.n % script.helperEndsEvery === 0) message = { role: "assistant", content: "done" };
  else {
    const agents = who === "caller" ? script.agentCalls[request.index % script.agentCalls.length]! : 0;
    if (agents > 1) bill.seen.add("several agents in one reply");
    message = { role: "assistant", content: null, tool_calls: agents > 0 ? toolCalls(request, "ask_helper", agents) : toolCalls(request, "add", 1) };
  }
  return replies.json({
    id: `chatcmpl-${request.index}`,
    object: "chat.completion",
    created: 0,
    model,
    choices: [{ index: 0, finish_reason: completion < wish ? "length" : "stop", message }],
    usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion },
  });
}

function clientOf(server: OpenAIServer) {
  const resilience = { maxRetries: 1, initialDelayMs: 1, maxDelayMs: 2, jitter: 0 };
  return resolveModelClient({ baseURL: server.baseURL, apiKey: "test-key", model: "priced-model", stream: false, resilience, fallbacks: [{ model: "backup-model" }] });
}

const scriptArbitrary = fc.record({
  wishes: fc.array(fc.integer({ min: 1, max: 1_500 }), { minLength: 1, maxLength: 6 }),
  agentCalls: fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 1, maxLength: 4 }),
  faults: fc.array(fc.tuple(fc.integer({ min: 0, max: 30 }), fc.constantFrom("error" as const, "drop" as const)), { maxLength: 5 }).map((list) => new Map(list)),
  helperEndsEvery: fc.integer({ min: 0, max: 3 }),
});

const caseArbitrary = fc.record({
  script: scriptArbitrary,
  tokens: fc.option(fc.integer({ min: 300, max: 12_000 }), { nil: undefined }),
  // In currency: 1e-6 buys one output token of the main model.
  cost: fc.option(fc.integer({ min: 500, max: 40_000 }).map((millionths) => millionths / 1_000_000), { nil: undefined }),
  // Each agent summarizes (or not) past its own limit.
  callerContext: fc.option(fc.integer({ min: 150, max: 800 }), { nil: undefined }),
  helperContext: fc.option(fc.integer({ min: 150, max: 800 }), { nil: undefined }),
});

const contextOf = (maxTokens: number | undefined) => (maxTokens === undefined ? {} : { context: { maxTokens, strategy: "summarize" as const, keepLast: 2 } });

/** A caller and its helper on one server, the caller under `budgets`. */
function agentsOn(server: OpenAIServer, budgets: { maxBudgetTokens?: number; maxBudgetCost?: number }, contexts: { caller?: number; helper?: number } = {}) {
  const modelClient = clientOf(server);
  const helper = createReactMachine({ name: "Helper", modelClient, tools: [add], config: { maxIterations: 4, pricing, ...contextOf(contexts.helper) }, configFile: false });
  return createReactMachine({
    name: "Caller",
    modelClient,
    tools: [add, agentTool(helper, { name: "ask_helper", description: "Ask the helper" })],
    config: { maxIterations: 12, pricing, ...budgets, ...contextOf(contexts.caller) },
    configFile: false,
  });
}

describe("budgets that hold, with nested agents, summaries, retries and fallbacks", () => {
  // Request 0: the caller asks the helper. 1: the helper's first attempt is dropped. With little left,
  // counting it leaves no room for a retry (tokenBudget); with more, the retry and both attempts on the
  // fallback fail with a 500 (modelError). Either way the helper's call failed for good, and the caller goes on.
  it.each([
    { budget: 6_000, helperReason: "tokenBudget" },
    { budget: 20_000, helperReason: "modelError" },
  ])("a nested agent whose call failed for good ($helperReason) after a dropped attempt hands what it may have cost to its caller", async ({ budget, helperReason }) => {
    const script: Script = { wishes: [400], agentCalls: [1, 0], faults: new Map([[1, "drop"], [2, "error"], [3, "error"], [4, "error"]]), helperEndsEvery: 0 };
    const bill: Bill = { tokens: 0, cost: 0, seen: new Set() };
    const server = await startOpenAIServer({ respond: (request) => respond(script, bill, { n: 0 }, request) });
    servers.push(server);
    const ends: AgentEmitted[] = [];
    const output = await runAgent(agentsOn(server, { maxBudgetTokens: budget }), { messages: [human("ask the helper")] }, { onEvent: (event) => event.type === "loop.terminated" && ends.push(event) });
    const terminated = ends as Extract<AgentEmitted, { type: "loop.terminated" }>[];
    // The helper's first run (the caller may ask it again later), and the caller's own end.
    const helperEnd = terminated.find((event) => event.agent === "Helper");
    const callerEnd = terminated.find((event) => event.agentPath === undefined);
    expect(helperEnd).toMatchObject({ agent: "Helper", reason: helperReason });
    // The dropped attempt counts as its prompt and its whole cap, for the helper and then for its caller.
    expect(helperEnd!.unreported?.tokens).toBeGreaterThan(0);
    expect(callerEnd).toMatchObject({ agent: "Caller", status: "failed" });
    expect(callerEnd!.unreported?.tokens).toBeGreaterThanOrEqual(helperEnd!.unreported!.tokens);
    expect(bill.tokens).toBeLessThanOrEqual(budget);
    expect(output.usage.totalTokens + callerEnd!.unreported!.tokens).toBeLessThanOrEqual(budget);
  });

  it("what the server may bill never exceeds the caller's token and cost budgets (property)", async () => {
    const reached = new Set<string>();
    await fc.assert(
      fc.asyncProperty(caseArbitrary, async ({ script, tokens, cost, callerContext, helperContext }) => {
        // Without any budget there is nothing to hold: give the case a token budget.
        const budgets = tokens === undefined && cost === undefined ? { maxBudgetTokens: 4_000 } : { ...(tokens !== undefined ? { maxBudgetTokens: tokens } : {}), ...(cost !== undefined ? { maxBudgetCost: cost } : {}) };
        const bill: Bill = { tokens: 0, cost: 0, seen: new Set() };
        const helperReplies = { n: 0 };
        const server = await startOpenAIServer({ respond: (request) => respond(script, bill, helperReplies, request) });
        servers.push(server);
        const caller = agentsOn(server, budgets, { ...(callerContext !== undefined ? { caller: callerContext } : {}), ...(helperContext !== undefined ? { helper: helperContext } : {}) });
        const output = await runAgent(caller, { messages: [human("keep asking the helper")] });
        await server.close();
        for (const what of bill.seen) reached.add(what);
        if (output.termination?.reason) reached.add(output.termination.reason);
        const what = JSON.stringify({ budgets, bill: { tokens: bill.tokens, cost: bill.cost }, usage: output.usage, termination: output.termination?.reason });
        if (budgets.maxBudgetTokens !== undefined) {
          expect(bill.tokens, what).toBeLessThanOrEqual(budgets.maxBudgetTokens);
          expect(output.usage.totalTokens, what).toBeLessThanOrEqual(budgets.maxBudgetTokens);
        }
        if (budgets.maxBudgetCost !== undefined) {
          expect(bill.cost, what).toBeLessThanOrEqual(budgets.maxBudgetCost);
          expect(output.usage.cost ?? 0, what).toBeLessThanOrEqual(budgets.maxBudgetCost);
        }
      }),
      { numRuns: 40, seed: 3301 },
    );
    // The cases went where they are meant to: nested agents (several from one reply), summaries, fallbacks, dropped connections, both budgets.
    for (const what of ["helper", "summary", "fallback", "drop", "several agents in one reply", "tokenBudget", "costBudget"]) {
      expect([...reached], what).toContain(what);
    }
  }, 120_000);
});
