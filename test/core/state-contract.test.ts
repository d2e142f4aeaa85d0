import { describe, expect, it } from "vitest";
import { z } from "zod";
import { human, MessageSchema } from "../../actors/messages.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { runAgent } from "../../machines/runner.js";
import { ReActState, runField, stepField } from "../../machines/contract/state.js";
import { scriptedModel } from "../../testing/scripted-model.js";
import { multiply } from "./helpers.js";

const oneToolRound = () => [{ toolCalls: [{ name: "multiply", arguments: { a: 2, b: 2 } }], usage: { promptTokens: 10, completionTokens: 2 } }, { content: "4", usage: { promptTokens: 12, completionTokens: 1 } }];

describe("first-round tool choice", () => {
  it("sends config.toolChoice on request 1 only", async () => {
    const model = scriptedModel(oneToolRound());
    await runAgent(createReactMachine({ modelClient: model, tools: [multiply], config: { toolChoice: "required" } }), { messages: [human("2*2")] });
    expect(model.requests.map((r) => r.toolChoice)).toEqual(["required", undefined]);
  });

  it("applies the same rule to extraParams.tool_choice, keeping the other extra params", async () => {
    const model = scriptedModel(oneToolRound());
    const config = { extraParams: { tool_choice: { type: "function", function: { name: "multiply" } }, seed: 7 } };
    await runAgent(createReactMachine({ modelClient: model, tools: [multiply], config }), { messages: [human("2*2")] });
    expect(model.requests[0]!.extraParams).toEqual(config.extraParams);
    expect(model.requests[1]!.extraParams).toEqual({ seed: 7 });
  });

  it("sends it again on the first round of the next run", async () => {
    const model = scriptedModel([...oneToolRound(), ...oneToolRound()]);
    const machine = createReactMachine({ modelClient: model, tools: [multiply], config: { toolChoice: "auto" } });
    const first = await runAgent(machine, { messages: [human("2*2")] });
    await runAgent(machine, { state: first.state, messages: [human("again")] });
    expect(model.requests.map((r) => r.toolChoice)).toEqual(["auto", undefined, "auto", undefined]);
  });

  it("passes sampling settings and the timeout (seconds → ms) to the model", async () => {
    const model = scriptedModel([{ content: "ok" }]);
    const config = { model: "gpt-test", temperature: 0.3, maxTokens: 64, topP: 0.9, topK: 40, timeout: 12 };
    await runAgent(createReactMachine({ modelClient: model, config }), { messages: [human("x")] });
    expect(model.requests[0]).toMatchObject({ model: "gpt-test", temperature: 0.3, maxTokens: 64, topP: 0.9, topK: 40, timeoutMs: 12_000 });
  });
});

describe("lifetimes", () => {
  it("a second run on the same state starts with rounds 0, done false and empty run fields, keeping messages and toolEffects", async () => {
    const model = scriptedModel([...oneToolRound(), { content: "second answer" }]);
    const machine = createReactMachine({ modelClient: model, tools: [multiply] });
    const first = await runAgent(machine, { messages: [human("2*2")] });
    expect(first.state).toMatchObject({ rounds: 2, done: true, finalAnswer: "4", usage: { totalTokens: 25 } });

    const events: string[] = [];
    const second = await runAgent(machine, { state: first.state, messages: [human("and now?")] }, { onEvent: (e) => e.type === "reply.started" && events.push(String(e.round)) });
    // The first reply of run 2 is round 1 again: rounds was reset to 0 at the start.
    expect(events).toEqual(["1"]);
    expect(second.rounds).toBe(1);
    expect(second.usage.totalTokens).toBe(0);
    expect(second.messages).toHaveLength(first.messages.length + 2);
    expect(model.requests[2]!.messages.filter((m) => m.role !== "system")).toHaveLength(first.messages.length + 1);
  });

  it("a run starts clean even when the input state carries stale step and run values", async () => {
    const model = scriptedModel([{ content: "fresh" }]);
    const stale = { actions: [{ id: "old", name: "multiply", arguments: "{}" }], done: true, rounds: 7, finalAnswer: "stale", streamingOutput: "stale" };
    const output = await runAgent(createReactMachine({ modelClient: model, tools: [multiply] }), { state: stale, messages: [human("x")] });
    expect(output.rounds).toBe(1);
    expect(output.finalAnswer).toBe("fresh");
    expect(output.messages.some((m) => m.role === "tool")).toBe(false);
  });

  it("user fields declared on an extended schema follow their lifetimes", async () => {
    const schema = ReActState.extend({
      task: z.string().default(""),
      scratch: runField(z.string().default("")),
      lastTool: stepField(z.string().nullable().default(null)),
    });
    const model = scriptedModel([{ content: "ok" }]);
    const output = await runAgent(createReactMachine({ modelClient: model, stateSchema: schema }), {
      state: { task: "kept", scratch: "reset me", lastTool: "reset me too" },
      messages: [human("x")],
    });
    expect(output.state).toMatchObject({ task: "kept", scratch: "", lastTool: null });
  });
});

describe("namespace and keys", () => {
  it("namespace isolates two agents sharing one host state", async () => {
    const alpha = createReactMachine({ name: "Alpha", namespace: "alpha", modelClient: scriptedModel([{ content: "A says hi" }]) });
    const beta = createReactMachine({ name: "Beta", namespace: "beta", modelClient: scriptedModel([{ content: "B says hi" }]) });
    const host = { topic: "greetings" };
    const afterAlpha = await runAgent(alpha, { state: host, messages: [human("hello A")] });
    const afterBeta = await runAgent(beta, { state: afterAlpha.state, messages: [human("hello B")] });
    expect(afterBeta.state["topic"]).toBe("greetings");
    expect(afterBeta.state).toMatchObject({
      alpha: { finalAnswer: "A says hi", rounds: 1 },
      beta: { finalAnswer: "B says hi", rounds: 1 },
    });
    expect((afterBeta.state["alpha"] as { messages: unknown[] }).messages).toHaveLength(2);
    expect((afterBeta.state["beta"] as { messages: unknown[] }).messages).toHaveLength(2);
    expect(afterBeta.state).not.toHaveProperty("messages");
    expect(afterBeta.finalAnswer).toBe("B says hi");
  });

  it("config.keys stores ReAct fields under other (dotted) names", async () => {
    const model = scriptedModel(oneToolRound());
    const machine = createReactMachine({ modelClient: model, tools: [multiply], config: { keys: { messages: "chat", usage: "llm.usage", finalAnswer: "answer" } } });
    const output = await runAgent(machine, { state: { chat: [human("earlier")] }, messages: [human("2*2")] });
    expect(output.state).toMatchObject({ answer: "4", llm: { usage: { totalTokens: 25 } } });
    expect(output.state["chat"]).toHaveLength(5);
    expect(output.state).not.toHaveProperty("messages");
    expect(output.state).not.toHaveProperty("usage");
    expect(model.requests[0]!.messages.slice(1)).toEqual([human("earlier"), human("2*2")]);
  });

  it("namespace and keys combine", async () => {
    const machine = createReactMachine({ namespace: "agent", modelClient: scriptedModel([{ content: "x" }]), config: { keys: { finalAnswer: "result.text" } } });
    const output = await runAgent(machine, { messages: [human("x")] });
    expect(output.state).toMatchObject({ agent: { result: { text: "x" } } });
  });
});

describe("the context is JSON-safe", () => {
  it("a finished run's context survives JSON round-tripping unchanged", async () => {
    const model = scriptedModel(oneToolRound());
    const output = await runAgent(createReactMachine({ modelClient: model, tools: [multiply] }), { messages: [human("2*2")] });
    expect(JSON.parse(JSON.stringify(output))).toEqual(output);
    for (const message of output.messages) expect(MessageSchema.parse(message)).toEqual(message);
  });
});

describe("bad input", () => {
  it("rejects a state that is not plain JSON, naming the field", async () => {
    const machine = createReactMachine({ modelClient: scriptedModel([]) });
    await expect(runAgent(machine, { state: { when: new Date() } })).rejects.toThrow(/state\.when: is a Date object; state must be plain JSON/);
    await expect(runAgent(machine, { state: { nested: { f: () => 1 } } })).rejects.toThrow(/state\.nested\.f: is a function/);
  });

  it("rejects messages of the wrong shape, naming the field", async () => {
    const machine = createReactMachine({ modelClient: scriptedModel([]) });
    await expect(runAgent(machine, { messages: [{ role: "robot", content: "x" } as never] })).rejects.toThrow(/input\.messages\.0/);
    await expect(runAgent(machine, { state: { rounds: -1 } })).rejects.toThrow(/state\.rounds/);
  });

  it("rejects bad machine options with the field and the fix", () => {
    expect(() => createReactMachine({} as never)).toThrow(/options\.modelClient is required: pass ModelClient\.resolve/);
    expect(() => createReactMachine({ modelClient: scriptedModel([]), namespace: "a.b" })).toThrow(/options\.namespace must be a plain field name/);
    expect(() => createReactMachine({ modelClient: scriptedModel([]), constraints: ["allow"] as never })).toThrow(/constraints\[0\] must be a guard function/);
    expect(() => createReactMachine({ modelClient: scriptedModel([]), tools: [multiply, multiply] })).toThrow(/multiply.*used by two static tools/);
    expect(() => createReactMachine({ modelClient: scriptedModel([]), config: { maxIterations: 0 } as never })).toThrow(/config: maxIterations = 0 is invalid/);
  });
});
