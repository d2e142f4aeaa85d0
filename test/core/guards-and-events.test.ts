import { describe, expect, it } from "vitest";
import { createActor, fromPromise, toPromise } from "xstate";
import { z } from "zod";
import type { Guard } from "../../actors/guard.js";
import type { LLMInput, LLMOutput } from "../../actors/llm-step.js";
import { human, type ToolMessage } from "../../actors/messages.js";
import type { AgentEmitted } from "../../machines/contract/events.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { runAgent } from "../../machines/runner.js";
import { resolveModelClient } from "../../actors/openai/openai-model-client.js";
import { replies, startOpenAIServer } from "../../testing/openai-server.js";
import { scriptedModel } from "../../testing/scripted-model.js";
import { defineTool } from "../../tools/tool.js";
import { multiply, nextEvent, startAgent } from "./helpers.js";

function counter() {
  const runs: string[] = [];
  const tool = defineTool({
    name: "delete_file",
    description: "Deletes a file",
    parameters: z.object({ path: z.string() }),
    effectTags: ["destructive"],
    execute: ({ path }) => {
      runs.push(path);
      return `deleted ${path}`;
    },
  });
  return { runs, tool };
}

const needsApproval: Guard = (call) => (call.name === "delete_file" ? { decision: "pending", reason: "deleting needs a human" } : { decision: "allow" });

describe("guards in Preflight", () => {
  it("a denied call is never executed and the model reads the reason", async () => {
    const { runs, tool } = counter();
    const deny: Guard = (call) => (call.name === "delete_file" ? { decision: "deny", reason: "deleting is not allowed here" } : { decision: "allow" });
    const model = scriptedModel([{ toolCalls: [{ id: "d1", name: "delete_file", arguments: { path: "/a" } }] }, { content: "I could not delete it." }]);
    const events: AgentEmitted[] = [];
    const output = await runAgent(createReactMachine({ modelClient: model, tools: [tool], constraints: [deny] }), { messages: [human("rm /a")] }, { onEvent: (e) => events.push(e) });
    expect(runs).toEqual([]);
    expect(output.messages[2]).toMatchObject({ role: "tool", toolCallId: "d1", content: "Call denied: deleting is not allowed here", isError: true });
    expect(events.find((e) => e.type === "tool.call.denied")).toMatchObject({ callId: "d1", decision: "denied", reason: "deleting is not allowed here" });
    expect(events.some((e) => e.type === "tool.call.started")).toBe(false);
  });

  it("a pending call waits in AwaitingApproval until guard.approve, then runs", async () => {
    const { runs, tool } = counter();
    const model = scriptedModel([{ toolCalls: [{ id: "d1", name: "delete_file", arguments: { path: "/a" } }] }, { content: "Deleted." }]);
    const { actor, done } = startAgent(createReactMachine({ modelClient: model, tools: [tool], constraints: [needsApproval] }), { messages: [human("rm /a")] });
    const request = await nextEvent(actor, "guard.approval.requested");
    expect(request).toMatchObject({ callId: "d1", name: "delete_file", arguments: '{"path":"/a"}', reason: "deleting needs a human", agent: "ReActAgent", iteration: 0 });
    expect(actor.getSnapshot().matches({ Evaluating: { ChildRunning: { ToolExecutor: "AwaitingApproval" } } })).toBe(true);
    expect(runs).toEqual([]);
    actor.send({ type: "guard.approve", callId: "d1" });
    const output = await done;
    expect(runs).toEqual(["/a"]);
    expect(output.finalAnswer).toBe("Deleted.");
    expect((output.messages[2] as ToolMessage).content).toBe("deleted /a");
  });

  it("guard.reject sends the reason to the model and never runs the tool", async () => {
    const { runs, tool } = counter();
    const model = scriptedModel([{ toolCalls: [{ id: "d1", name: "delete_file", arguments: { path: "/a" } }] }, { content: "OK, I will not." }]);
    const { actor, done } = startAgent(createReactMachine({ modelClient: model, tools: [tool], constraints: [needsApproval] }), { messages: [human("rm /a")] });
    await nextEvent(actor, "guard.approval.requested");
    actor.send({ type: "guard.reject", callId: "d1", reason: "that file is important" });
    const output = await done;
    expect(runs).toEqual([]);
    expect(output.messages[2]).toMatchObject({ role: "tool", toolCallId: "d1", content: "Call rejected: that file is important", isError: true });
    expect(model.requests[1]!.messages.at(-1)).toMatchObject({ content: "Call rejected: that file is important" });
  });

  it("approving an unknown call id changes nothing and is reported", async () => {
    const { tool } = counter();
    const model = scriptedModel([{ toolCalls: [{ id: "d1", name: "delete_file", arguments: { path: "/a" } }] }, { content: "ok" }]);
    const { actor, done } = startAgent(createReactMachine({ modelClient: model, tools: [tool], constraints: [needsApproval] }), { messages: [human("rm /a")] });
    await nextEvent(actor, "guard.approval.requested");
    const refused = nextEvent(actor, "guard.approval.refused");
    const before = actor.getSnapshot().context;
    actor.send({ type: "guard.approve", callId: "nope" });
    expect(await refused).toMatchObject({ callId: "nope", reason: 'no call with id "nope" is waiting for approval' });
    expect(actor.getSnapshot().context).toBe(before);
    actor.send({ type: "guard.reject", callId: "d1" });
    expect((await done).status).toBe("succeeded");
  });

  it("every call of a batch passes through the guards with its siblings visible", async () => {
    const seen: string[][] = [];
    const spy: Guard = (call, ctx) => {
      seen.push([call.id, call.name, String(call.args?.["a"]), String(ctx.batch.length), call.tool?.name ?? "unknown"]);
      return { decision: "allow" };
    };
    const model = scriptedModel([
      { toolCalls: [{ id: "x", name: "multiply", arguments: { a: 1, b: 2 } }, { id: "y", name: "ghost", arguments: { a: 3 } }] },
      { content: "ok" },
    ]);
    await runAgent(createReactMachine({ modelClient: model, tools: [multiply], constraints: [spy] }), { messages: [human("go")] });
    expect(seen).toEqual([
      ["x", "multiply", "1", "2", "multiply"],
      ["y", "ghost", "3", "2", "unknown"],
    ]);
  });
});

describe("telemetry", () => {
  it("emits the contract section 7 events in order, each with agent, iteration and timestamp", async () => {
    const model = scriptedModel([{ content: "thinking", toolCalls: [{ id: "m", name: "multiply", arguments: { a: 2, b: 5 } }], usage: { promptTokens: 3, completionTokens: 4 } }, { content: "ten", usage: { promptTokens: 5, completionTokens: 1 } }]);
    const events: AgentEmitted[] = [];
    await runAgent(createReactMachine({ name: "Calc", modelClient: model, tools: [multiply], now: () => 1_000 }), { messages: [human("2*5")] }, { onEvent: (e) => events.push(e) });
    expect(events.map((e) => `${e.type}@${e.iteration}`)).toEqual([
      "reply.started@0",
      "model.call.started@0",
      "text.delta@0",
      "model.call.completed@0",
      "reply.completed@0",
      "tool.call.started@0",
      "tool.call.completed@0",
      "reply.started@1",
      "model.call.started@1",
      "text.delta@1",
      "model.call.completed@1",
      "reply.completed@1",
      "loop.terminated@1",
    ]);
    expect(events.every((e) => e.agent === "Calc" && e.timestamp === 1_000 && typeof e.runId === "string")).toBe(true);
    expect(events.find((e) => e.type === "model.call.completed")).toMatchObject({ usage: { promptTokens: 3, completionTokens: 4, totalTokens: 7 } });
    expect(events.find((e) => e.type === "tool.call.completed")).toMatchObject({ callId: "m", name: "multiply", output: "10" });
    expect(events.at(-1)).toMatchObject({ type: "loop.terminated", status: "succeeded", rounds: 2, usage: { totalTokens: 13 } });
    expect(JSON.stringify(events)).not.toMatch(/authorization|apiKey/i);
  });

  it("streams text into streamingOutput while the reply arrives (chunks 40 ms apart, over real HTTP)", async () => {
    const words = ["one ", "two ", "three"];
    const chunk = (delta: object, finish: string | null = null) => ({ id: "c", object: "chat.completion.chunk", created: 1, model: "m", choices: [{ index: 0, delta, finish_reason: finish }] });
    const server = await startOpenAIServer({
      respond: () => replies.sseFromChunks([chunk({ role: "assistant", content: "" }), ...words.map((w) => chunk({ content: w })), chunk({}, "stop")], { delayMs: 40 }),
    });
    try {
      const modelClient = resolveModelClient({ baseURL: server.baseURL, apiKey: "k", model: "m", stream: true });
      const { actor, done } = startAgent(createReactMachine({ modelClient, configFile: false }), { messages: [human("count")] });
      const partials: string[] = [];
      actor.subscribe((s) => partials.push(s.context.state["streamingOutput"] as string));
      const deltas: string[] = [];
      actor.on("text.delta", (e) => deltas.push(e.delta));
      await done;
      expect(partials).toContain("one ");
      expect(partials).toContain("one two ");
      expect(partials.at(-1)).toBe("one two three");
      expect(deltas).toEqual(words);
    } finally {
      await server.close();
    }
  });

  it("sends bursts of progress as one event, and the last burst with the result, without changing what is emitted", async () => {
    const model = scriptedModel([{ toolCalls: [{ id: "m", name: "multiply", arguments: { a: 2, b: 5 } }] }, { content: "ten, as asked" }]);
    const machine = createReactMachine({ modelClient: model, tools: [multiply], now: () => 1_000 });
    const received: string[] = [];
    const emitted: string[] = [];
    const actor = createActor(machine, { input: { messages: [human("2*5")] }, inspect: (e) => e.type === "@xstate.event" && received.push(e.event.type) });
    actor.on("*", (e) => emitted.push(e.type));
    actor.start();
    await toPromise(actor);
    // The scripted model and the tool answer at once: nothing needs sending before the results.
    expect(received.filter((type) => type === "llm.progress" || type === "tool.progress")).toEqual([]);
    expect(emitted).toEqual([
      "reply.started",
      "model.call.started",
      "model.call.completed",
      "reply.completed",
      "tool.call.started",
      "tool.call.completed",
      "reply.started",
      "model.call.started",
      "text.delta",
      "text.delta",
      "text.delta",
      "model.call.completed",
      "reply.completed",
      "loop.terminated",
    ]);
    expect(actor.getSnapshot().context.state["streamingOutput"]).toBe("ten, as asked");
  });

  it("a slow step sends its progress while it runs, within one frame (16 ms)", async () => {
    const model = scriptedModel([{ content: "late", delayMs: 120 }]);
    const { actor, done } = startAgent(createReactMachine({ modelClient: model }), { messages: [human("x")] });
    const started = performance.now();
    await nextEvent(actor, "model.call.started");
    const waited = performance.now() - started;
    expect(actor.getSnapshot().matches({ Evaluating: { ChildRunning: "AgentLLM" } })).toBe(true);
    expect(waited).toBeLessThan(110);
    await done;
  });

  it("names child actors after the machine, so several agents can share one system", async () => {
    const model = scriptedModel([{ content: "hi", delayMs: 20 }]);
    const { actor, done } = startAgent(createReactMachine({ name: "Alpha", modelClient: model }), { messages: [human("x")] });
    // Without tool providers, the providers' actor only says the tools are ready: it lives in Initialising alone;
    // the step host, which runs the model calls and the tool batches, lives as long as the run.
    expect(Object.keys(actor.getSnapshot().children)).toEqual(["Alpha.steps", "Alpha.toolProviders"]);
    await nextEvent(actor, "model.call.started");
    expect(Object.keys(actor.getSnapshot().children)).toEqual(["Alpha.steps"]);
    await done;
  });
});

describe("swapping actors with machine.provide()", () => {
  it("the LLM actor can be replaced under its stable name", async () => {
    const machine = createReactMachine({ modelClient: scriptedModel([]) }).provide({
      actors: {
        llm: fromPromise<LLMOutput, LLMInput>(async () => ({ content: "from a provided actor", toolCalls: [], usage: { promptTokens: 1, completionTokens: 1, totalTokens: 2 }, finishReason: "stop", model: "custom" })),
      },
    });
    const output = await runAgent(machine, { messages: [human("x")] });
    expect(output.finalAnswer).toBe("from a provided actor");
  });
});
