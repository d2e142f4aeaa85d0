import { describe, expect, it } from "vitest";
import { z } from "zod";
import { human, type ToolMessage } from "../../actors/messages.js";
import { textOf } from "../../actors/content-parts.js";
import type { AgentEmitted } from "../../machines/contract/events.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { runAgent } from "../../machines/runner.js";
import { scriptedModel } from "../../testing/scripted-model.js";
import { defineTool } from "../../tools/tool.js";
import { multiply, nextEvent, startAgent } from "./helpers.js";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function toolMessages(messages: readonly { role: string }[]): ToolMessage[] {
  return messages.filter((m): m is ToolMessage => m.role === "tool");
}

/** Two calls of a tool that records when each starts and ends: "a" is slow, "b" fast. */
async function runTwoSteps(mode: "serial" | "parallel" | "auto", parallelSafe: boolean): Promise<string[]> {
  const order: string[] = [];
  const step = defineTool({
    name: "step",
    description: "Record start and end",
    parameters: z.object({ label: z.string(), ms: z.number() }),
    parallelSafe,
    execute: async ({ label, ms }) => {
      order.push(`start ${label}`);
      await sleep(ms);
      order.push(`end ${label}`);
      return label;
    },
  });
  const model = scriptedModel([
    { toolCalls: [{ name: "step", arguments: { label: "a", ms: 30 } }, { name: "step", arguments: { label: "b", ms: 1 } }] },
    { content: "ok" },
  ]);
  await runAgent(createReactMachine({ modelClient: model, tools: [step], config: { toolExecution: mode } }), { messages: [human("go")] });
  return order;
}

/** A tool that runs until its signal aborts; `started` resolves once it is running. */
function hangingTool() {
  let running!: () => void;
  const started = new Promise<void>((resolve) => (running = resolve));
  const state: { abortReason: unknown } = { abortReason: "not aborted" };
  const tool = defineTool({
    name: "hang",
    description: "Waits until aborted",
    parameters: z.object({}),
    execute: (_args, ctx) =>
      new Promise((_, reject) => {
        ctx.signal.addEventListener("abort", () => {
          state.abortReason = ctx.signal.reason;
          reject(new Error("aborted"));
        });
        running();
      }),
  });
  return { tool, started, state };
}

describe("tool execution", () => {
  it("turns every bad call into an error observation and tool.call.failed, and the loop goes on", async () => {
    const boom = defineTool({
      name: "boom",
      description: "Always throws",
      parameters: z.object({}),
      execute: () => {
        throw new Error("disk on fire");
      },
    });
    const slow = defineTool({
      name: "slow",
      description: "Never finishes in time",
      parameters: z.object({}),
      timeoutMs: 30,
      execute: (_args, ctx) => new Promise((resolve) => ctx.signal.addEventListener("abort", () => resolve("late"))),
    });
    const model = scriptedModel([
      {
        toolCalls: [
          { id: "c_unknown", name: "no_such_tool", arguments: {} },
          { id: "c_json", name: "multiply", arguments: '{"a": 2, "b":' },
          { id: "c_schema", name: "multiply", arguments: { a: "two", b: 3 } },
          { id: "c_throw", name: "boom", arguments: {} },
          { id: "c_timeout", name: "slow", arguments: {} },
          { id: "c_ok", name: "multiply", arguments: { a: 6, b: 7 } },
        ],
      },
      { content: "done despite errors" },
    ]);
    const events: AgentEmitted[] = [];
    const machine = createReactMachine({ modelClient: model, tools: [multiply, boom, slow] });
    const output = await runAgent(machine, { messages: [human("try everything")] }, { onEvent: (e) => events.push(e) });

    expect(output.status).toBe("succeeded");
    expect(output.finalAnswer).toBe("done despite errors");
    const observations = toolMessages(output.messages);
    expect(observations.map((m) => m.toolCallId)).toEqual(["c_unknown", "c_json", "c_schema", "c_throw", "c_timeout", "c_ok"]);
    expect(observations[0]!.content).toMatch(/no tool named "no_such_tool".*Available tools: multiply, boom, slow/);
    expect(observations[1]!.content).toMatch(/not a JSON object/);
    expect(observations[2]!.content).toMatch(/invalid arguments for multiply: a: /);
    expect(observations[3]!.content).toBe("Error: boom failed: disk on fire");
    expect(observations[4]!.content).toMatch(/slow timed out after 30 ms/);
    expect(observations[5]).toMatchObject({ content: "42" });
    expect(observations.slice(0, 5).every((m) => m.isError === true)).toBe(true);
    expect(observations[5]!.isError).toBeUndefined();

    const failed = events.filter((e): e is Extract<AgentEmitted, { type: "tool.call.failed" }> => e.type === "tool.call.failed");
    expect(failed.map((e) => [e.callId, e.errorKind])).toEqual([
      ["c_unknown", "unknown_tool"],
      ["c_json", "invalid_json"],
      ["c_schema", "invalid_arguments"],
      ["c_throw", "threw"],
      ["c_timeout", "timeout"],
    ]);
    expect(events.filter((e) => e.type === "tool.call.completed").map((e) => (e as { callId: string }).callId)).toEqual(["c_ok"]);
    // The model read every observation in the next round.
    expect(toolMessages(model.requests[1]!.messages)).toHaveLength(6);
  });

  it("runs parallel-safe calls concurrently and appends results in call order, whatever finishes first", async () => {
    const finished: string[] = [];
    const wait = defineTool({
      name: "wait",
      description: "Wait then echo",
      parameters: z.object({ ms: z.number(), label: z.string() }),
      parallelSafe: true,
      execute: async ({ ms, label }) => {
        await sleep(ms);
        finished.push(label);
        return label;
      },
    });
    const model = scriptedModel([
      {
        toolCalls: [
          { id: "first", name: "wait", arguments: { ms: 80, label: "slow" } },
          { id: "second", name: "wait", arguments: { ms: 1, label: "fast" } },
          { id: "third", name: "wait", arguments: { ms: 20, label: "medium" } },
        ],
      },
      { content: "ok" },
    ]);
    const output = await runAgent(createReactMachine({ modelClient: model, tools: [wait] }), { messages: [human("go")] });
    expect(finished).toEqual(["fast", "medium", "slow"]);
    expect(toolMessages(output.messages).map((m) => [m.toolCallId, m.content])).toEqual([
      ["first", "slow"],
      ["second", "fast"],
      ["third", "medium"],
    ]);
  });

  it("auto mode runs serially when any tool is not parallel-safe; serial mode always does", async () => {
    for (const [mode, safe] of [
      ["auto", false],
      ["serial", true],
    ] as const) {
      expect(await runTwoSteps(mode, safe), mode).toEqual(["start a", "end a", "start b", "end b"]);
    }
  });

  it("parallel mode runs calls concurrently even when tools are not marked parallel-safe", async () => {
    expect(await runTwoSteps("parallel", false)).toEqual(["start a", "start b", "end b", "end a"]);
  });

  it("cancelling while a tool runs aborts the tool's signal and ends Failed with reason cancelled", async () => {
    const { tool: hang, started, state } = hangingTool();
    const model = scriptedModel([{ toolCalls: [{ name: "hang", arguments: {} }] }, { content: "never" }]);
    const { actor, done } = startAgent(createReactMachine({ modelClient: model, tools: [hang] }), { messages: [human("go")] });
    await started;
    actor.send({ type: "agent.cancel", reason: "user pressed stop" });
    const output = await done;
    expect(state.abortReason).not.toBe("not aborted");
    expect(output.status).toBe("failed");
    expect(output.termination).toMatchObject({ reason: "cancelled", detail: "user pressed stop" });
    expect(model.requests).toHaveLength(1);
  });

  it("a serial batch cancelled during its first call never begins the next, even when the running tool ignores its signal", async () => {
    const ran: string[] = [];
    let running!: () => void;
    const started = new Promise<void>((resolve) => (running = resolve));
    const stubborn = defineTool({
      name: "stubborn",
      description: "Ignores its signal and never ends",
      parameters: z.object({ label: z.string() }),
      execute: ({ label }) => {
        ran.push(label);
        running();
        return new Promise(() => undefined);
      },
    });
    const model = scriptedModel([{ toolCalls: [{ name: "stubborn", arguments: { label: "first" } }, { name: "stubborn", arguments: { label: "second" } }] }]);
    const machine = createReactMachine({ modelClient: model, tools: [stubborn], config: { toolExecution: "serial" } });
    const { actor, done } = startAgent(machine, { messages: [human("go")] });
    await started;
    actor.send({ type: "agent.cancel" });
    const output = await done;
    expect(output.termination?.reason).toBe("cancelled");
    await sleep(20);
    expect(ran).toEqual(["first"]);
  });

  it("cancelling during a model call aborts the call", async () => {
    const model = scriptedModel([{ content: "too late", delayMs: 10_000 }]);
    const { actor, done } = startAgent(createReactMachine({ modelClient: model }), { messages: [human("go")] });
    await nextEvent(actor, "model.call.started");
    actor.send({ type: "agent.cancel" });
    const output = await done;
    expect(output.termination?.reason).toBe("cancelled");
    expect(output.messages).toHaveLength(1);
  });

  it("aborting runAgent's signal cancels the run", async () => {
    const controller = new AbortController();
    const model = scriptedModel([{ content: "too late", delayMs: 10_000 }]);
    const pending = runAgent(createReactMachine({ modelClient: model }), { messages: [human("go")] }, { signal: controller.signal });
    setTimeout(() => controller.abort(), 10);
    const output = await pending;
    expect(output.termination?.reason).toBe("cancelled");
  });

  it("gives tools a read-only view of the state and their call id", async () => {
    const seen: { callId: string; messages: number; writeError: string }[] = [];
    const peek = defineTool({
      name: "peek",
      description: "Look at the state",
      parameters: z.object({}),
      execute: (_args, ctx) => {
        let writeError = "";
        try {
          (ctx.state as Record<string, unknown>)["done"] = true;
        } catch (error) {
          writeError = (error as Error).message;
        }
        seen.push({ callId: ctx.callId, messages: (ctx.state["messages"] as unknown[]).length, writeError });
        return "ok";
      },
    });
    const model = scriptedModel([{ toolCalls: [{ id: "peek_1", name: "peek", arguments: {} }] }, { content: "fine" }]);
    await runAgent(createReactMachine({ modelClient: model, tools: [peek] }), { messages: [human("look")] });
    expect(seen).toEqual([{ callId: "peek_1", messages: 2, writeError: "ctx.state is read-only: tools report results by returning them" }]);
  });

  it("truncates outputs longer than maxToolOutputChars with a marker", async () => {
    const big = defineTool({ name: "big", description: "Huge output", parameters: z.object({}), execute: () => "x".repeat(5000) });
    const model = scriptedModel([{ toolCalls: [{ name: "big", arguments: {} }] }, { content: "ok" }]);
    const output = await runAgent(createReactMachine({ modelClient: model, tools: [big], config: { maxToolOutputChars: 1000 } }), {
      messages: [human("go")],
    });
    const observation = textOf(toolMessages(output.messages)[0]!.content);
    expect(observation.startsWith("x".repeat(1000) + "\n[output truncated: 4000 of 5000 characters omitted]")).toBe(true);
  });

  it("merges the effect tags of tools that ran into toolEffects, and a returnDirect tool ends the run", async () => {
    const write = defineTool({ name: "write", description: "Writes", parameters: z.object({}), effectTags: ["filesystem", "destructive"], execute: () => "written" });
    const finish = defineTool({ name: "finish", description: "Final answer", parameters: z.object({ answer: z.string() }), returnDirect: true, execute: ({ answer }) => answer });
    const model = scriptedModel([
      { toolCalls: [{ name: "write", arguments: {} }] },
      { toolCalls: [{ name: "finish", arguments: { answer: "all written" } }] },
    ]);
    const output = await runAgent(createReactMachine({ modelClient: model, tools: [write, finish] }), { messages: [human("go")] });
    expect(output.status).toBe("succeeded");
    expect(output.finalAnswer).toBe("all written");
    expect(output.toolEffects).toEqual(["filesystem", "destructive"]);
    expect(model.requests).toHaveLength(2);
  });

  it("a custom toolRunner replaces how calls run", async () => {
    const calls: string[] = [];
    const model = scriptedModel([{ toolCalls: [{ name: "multiply", arguments: { a: 3, b: 3 } }] }, { content: "ok" }]);
    const output = await runAgent(
      createReactMachine({
        modelClient: model,
        tools: [multiply],
        toolRunner: async (tool, args) => {
          calls.push(`${tool.name}(${JSON.stringify(args)})`);
          return "sandboxed";
        },
      }),
      { messages: [human("go")] },
    );
    expect(calls).toEqual(['multiply({"a":3,"b":3})']);
    expect(toolMessages(output.messages)[0]!.content).toBe("sandboxed");
  });
});

describe("a conversation that continues after a cancelled batch", () => {
  it("answers the calls that never ran, so the next request is a valid history", async () => {
    const { tool: hang, started } = hangingTool();
    const model = scriptedModel([{ toolCalls: [{ id: "h1", name: "hang", arguments: {} }] }, { content: "picked up again" }]);
    const machine = createReactMachine({ modelClient: model, tools: [hang] });
    const { actor, done } = startAgent(machine, { messages: [human("go")] });
    await started;
    actor.send({ type: "agent.cancel" });
    const cancelled = await done;
    expect(cancelled.messages.at(-1)).toMatchObject({ role: "assistant", toolCalls: [{ id: "h1" }] });

    const resumed = await runAgent(machine, { state: cancelled.state, messages: [human("try again")] });
    expect(resumed.finalAnswer).toBe("picked up again");
    const sent = model.requests[1]!.messages.filter((m) => m.role !== "system");
    expect(sent.map((m) => m.role)).toEqual(["user", "assistant", "tool", "user"]);
    expect(sent[2]).toMatchObject({ role: "tool", toolCallId: "h1", isError: true, content: expect.stringMatching(/^Not executed: the run stopped/) });
  });
});
