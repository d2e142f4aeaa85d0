import { describe, expect, it } from "vitest";
import { human } from "../../actors/messages.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { runAgent } from "../../machines/runner.js";
import { scriptedModel } from "../../testing/scripted-model.js";
import { calculatorTool } from "../../tools/builtin/index.js";
import { add, multiply, startAgent } from "./helpers.js";

describe("the ReAct loop", () => {
  it("answers 'What is 25 * 4 + 10?' in two rounds: a tool round, then the final answer", async () => {
    const model = scriptedModel([
      { toolCalls: [{ id: "call_mul", name: "multiply", arguments: { a: 25, b: 4 } }], usage: { promptTokens: 50, completionTokens: 10 } },
      { toolCalls: [{ id: "call_add", name: "add", arguments: { a: 100, b: 10 } }], usage: { promptTokens: 70, completionTokens: 10 } },
      { content: "25 * 4 + 10 = 110", usage: { promptTokens: 90, completionTokens: 8 } },
    ]);
    const machine = createReactMachine({ modelClient: model, tools: [multiply, add] });
    const output = await runAgent(machine, { messages: [human("What is 25 * 4 + 10?")] });

    expect(output.status).toBe("succeeded");
    expect(output.finalAnswer).toBe("25 * 4 + 10 = 110");
    expect(output.rounds).toBe(3);
    expect(output.usage).toEqual({ promptTokens: 210, completionTokens: 28, totalTokens: 238 });
    expect(output.messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant", "tool", "assistant"]);
    expect(output.messages[2]).toMatchObject({ role: "tool", toolCallId: "call_mul", content: "100" });
    expect(output.messages[4]).toMatchObject({ role: "tool", toolCallId: "call_add", content: "110" });
    expect(output.termination).toBeUndefined();
    // Round 2's request carries the first observation.
    expect(model.requests[1]!.messages.at(-1)).toMatchObject({ role: "tool", toolCallId: "call_mul", content: "100" });
  });

  it("matches the design note's integration case: rounds 2 and 4 messages (user, assistant+call, tool, assistant)", async () => {
    const model = scriptedModel([
      { toolCalls: [{ name: "calculator", arguments: { expression: "25 * 4 + 10" } }] },
      { content: "The answer is 110." },
    ]);
    const machine = createReactMachine({ modelClient: model, tools: [calculatorTool] });
    const output = await runAgent(machine, { messages: [human("What is 25 * 4 + 10?")] });
    expect(output.rounds).toBe(2);
    expect(output.state["done"]).toBe(true);
    expect(output.messages).toHaveLength(4);
    const [user, call, observation, answer] = output.messages;
    expect(user).toEqual({ role: "user", content: "What is 25 * 4 + 10?" });
    expect(call).toMatchObject({ role: "assistant", content: null, toolCalls: [{ name: "calculator", arguments: '{"expression":"25 * 4 + 10"}' }] });
    expect(observation).toMatchObject({
      role: "tool",
      content: '{"expression":"25 * 4 + 10","result":110}',
      toolCallId: (call as { toolCalls: { id: string }[] }).toolCalls[0]!.id,
    });
    expect(answer).toEqual({ role: "assistant", content: "The answer is 110." });
  });

  it("visits the LoopUntilSuccess states in order", async () => {
    const model = scriptedModel([{ toolCalls: [{ name: "multiply", arguments: { a: 2, b: 3 } }] }, { content: "6" }]);
    // A constraint: Preflight runs the guard actor, so the run rests there until it answers.
    const machine = createReactMachine({ modelClient: model, tools: [multiply], constraints: [() => ({ decision: "allow" })] });
    const seen = await statesVisited(machine);
    expect(seen).toEqual([
      '{"Evaluating":{"ChildRunning":"AgentLLM"}}',
      '{"Evaluating":{"ChildRunning":{"ToolExecutor":"Preflight"}}}',
      '{"Evaluating":{"ChildRunning":{"ToolExecutor":"Executing"}}}',
      // StateCondition → CheckBudget → Retry → Evaluating.CheckAbort are eventless: one macrostep.
      '{"Evaluating":{"ChildRunning":"AgentLLM"}}',
      '"Succeeded"',
    ]);
  });

  it("passes through Preflight in the same macrostep when no constraint needs a guard actor", async () => {
    const model = scriptedModel([{ toolCalls: [{ name: "multiply", arguments: { a: 2, b: 3 } }] }, { content: "6" }]);
    const machine = createReactMachine({ modelClient: model, tools: [multiply] });
    expect(await statesVisited(machine)).toEqual([
      '{"Evaluating":{"ChildRunning":"AgentLLM"}}',
      // AgentLLM done → Preflight (every call allowed, no actor) → Executing: one macrostep.
      '{"Evaluating":{"ChildRunning":{"ToolExecutor":"Executing"}}}',
      '{"Evaluating":{"ChildRunning":"AgentLLM"}}',
      '"Succeeded"',
    ]);
  });

  it("stops after exactly maxIterations model calls when the model never stops calling tools", async () => {
    const endless = Array.from({ length: 20 }, () => ({ toolCalls: [{ name: "multiply", arguments: { a: 1, b: 1 } }] }));
    const model = scriptedModel(endless);
    const machine = createReactMachine({ modelClient: model, tools: [multiply], config: { maxIterations: 4 } });
    const output = await runAgent(machine, { messages: [human("loop")] });
    expect(model.requests).toHaveLength(4);
    expect(output.status).toBe("failed");
    expect(output.termination).toMatchObject({ reason: "maxIterations", iterations: 4 });
    expect(output.iterations).toBe(4);
    expect(output.rounds).toBe(4);
  });

  it("defaults maxIterations to 10", async () => {
    const model = scriptedModel(Array.from({ length: 30 }, () => ({ toolCalls: [{ name: "multiply", arguments: { a: 1, b: 1 } }] })));
    const output = await runAgent(createReactMachine({ modelClient: model, tools: [multiply] }), { messages: [human("loop")] });
    expect(model.requests).toHaveLength(10);
    expect(output.termination?.reason).toBe("maxIterations");
  });

  it("never starts a model call whose prompt alone would not fit in what is left of the token budget", async () => {
    const turn = { toolCalls: [{ name: "multiply", arguments: { a: 1, b: 1 } }], usage: { promptTokens: 300, completionTokens: 100 } };
    const model = scriptedModel([turn, turn, turn, turn, turn]);
    const machine = createReactMachine({ modelClient: model, tools: [multiply], config: { maxBudgetTokens: 1000 }, configFile: false });
    const output = await runAgent(machine, { messages: [human("spend")] });
    // 400 after call 1, 800 after call 2: the server counted 300 prompt tokens where the estimate was
    // smaller, so later estimates are scaled up, and a third prompt does not fit in the 200 left.
    expect(model.requests).toHaveLength(2);
    expect(model.requests[1]!.maxTokens).toBeLessThanOrEqual(1000 - 400);
    expect(output.status).toBe("failed");
    expect(output.termination).toMatchObject({ reason: "tokenBudget", iterations: 2 });
    expect(output.termination?.error?.message).toMatch(/^not calling the model: the prompt \(about \d+ tokens\) leaves no room/);
    expect(output.usage.totalTokens).toBe(800);
  });

  it("ends Failed with reason modelError, keeping the error, when the model call fails", async () => {
    const model = scriptedModel([new Error("upstream exploded")]);
    const output = await runAgent(createReactMachine({ modelClient: model }), { messages: [human("hi")] });
    expect(output.status).toBe("failed");
    expect(output.termination).toMatchObject({ reason: "modelError", iterations: 0, error: { name: "Error", message: "upstream exploded" } });
    expect(output.messages).toEqual([human("hi")]);
  });

  it("a model that answers with a refusal ends the run with the refusal as the answer", async () => {
    const model = {
      description: "refuser",
      requests: [],
      complete: async () => ({ content: "", toolCalls: [], usage: { promptTokens: 1, completionTokens: 1, totalTokens: 2 }, finishReason: "stop", model: "m", refusal: "I can't help with that." }),
    };
    const output = await runAgent(createReactMachine({ modelClient: model }), { messages: [human("bad")] });
    expect(output.status).toBe("succeeded");
    expect(output.finalAnswer).toBe("I can't help with that.");
  });

  it("gives every tool call an id, even when the server sent an empty one", async () => {
    const model = scriptedModel([{ toolCalls: [{ id: "", name: "multiply", arguments: { a: 2, b: 2 } }] }, { content: "4" }]);
    // scriptedModel fills in missing ids itself; an explicit empty id reaches the machine as is.
    const output = await runAgent(createReactMachine({ modelClient: model, tools: [multiply] }), { messages: [human("2*2")] });
    const call = output.messages[1] as { toolCalls: { id: string }[] };
    expect(call.toolCalls[0]!.id).toBe("call_1_0");
    expect(output.messages[2]).toMatchObject({ toolCallId: "call_1_0", content: "4" });
  });
});

/** The state values a 2*3 run goes through, one entry per change (progress snapshots in the same state are skipped). */
async function statesVisited(machine: ReturnType<typeof createReactMachine>): Promise<string[]> {
  const { actor, done } = startAgent(machine, { messages: [human("2*3")] });
  const seen: string[] = [];
  actor.subscribe((snapshot) => {
    const value = JSON.stringify(snapshot.value);
    if (seen.at(-1) !== value) seen.push(value);
  });
  await done;
  return seen;
}
