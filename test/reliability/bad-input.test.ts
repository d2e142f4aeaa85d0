import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createActor } from "xstate";
import { z } from "zod";
import { human } from "../../actors/messages.js";
import { ModelClientOptionsError } from "../../actors/openai/model-client-options.js";
import { resolveModelClient } from "../../actors/openai/openai-model-client.js";
import { ConfigError, loadConfig } from "../../machines/contract/config.js";
import { AgentInputError } from "../../machines/contract/context.js";
import { createReactMachine, MachineOptionsError } from "../../machines/react-machine.js";
import { runAgent } from "../../machines/runner.js";
import { StateError } from "../../machines/contract/state-access.js";
import { scriptedModel } from "../../testing/scripted-model.js";
import type { ToolProvider } from "../../tools/provider.js";
import { defineTool, ToolDefinitionError, type Tool } from "../../tools/tool.js";
import { ToolSet } from "../../tools/toolset.js";
import { watchProcess } from "./process-watch.js";

/*
 * Bad input at every boundary: a clear error that names the field (and says how to fix it), and
 * nothing changed — no model call made, no tool run, no state moved.
 */

const echo = defineTool({
  name: "echo",
  description: "Say it back",
  parameters: z.object({ text: z.string() }),
  execute: ({ text }) => text,
});

/** What `fn` threw (the test fails when it throws nothing). */
function thrown(fn: () => unknown): Error {
  try {
    fn();
  } catch (error) {
    return error as Error;
  }
  throw new Error("expected an error, but the call succeeded");
}

async function rejection(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error("expected a rejection, but it resolved");
}

describe("invalid config", () => {
  it.each([
    [{ maxIterations: 0 }, /config: maxIterations = 0 is invalid/],
    [{ maxIterations: 2.5 }, /maxIterations = 2\.5 is invalid/],
    [{ temperature: "hot" }, /temperature = "hot" is invalid/],
    [{ maxToolOutputChars: 10 }, /maxToolOutputChars = 10 is invalid/],
    [{ toolExecution: "sometimes" }, /toolExecution = "sometimes" is invalid/],
    [{ maxBudgetTokens: -5 }, /maxBudgetTokens = -5 is invalid/],
    [{ resilience: { maxRetries: 99 } }, /resilience\.maxRetries = 99 is invalid/],
    [{ keys: { messages: "not a path!" } }, /keys\.messages = "not a path!" is invalid: must be a field name or dotted path/],
    [{ maxIteration: 3 }, /maxIteration = 3 is invalid: unknown field; remove it or check its spelling/],
  ])("%j is refused by name before anything runs", (config, message) => {
    const model = scriptedModel([{ content: "never" }]);
    const error = thrown(() => createReactMachine({ modelClient: model, config: config as never }));
    expect(error).toBeInstanceOf(ConfigError);
    expect(error.message).toMatch(message);
    expect(model.requests).toHaveLength(0);
  });

  it("a broken or wrong jianmu.yaml names the file and the field", () => {
    const dir = mkdtempSync(join(tmpdir(), "jianmu-bad-config-"));
    try {
      writeFileSync(join(dir, "broken.yaml"), "llm: [unclosed\n");
      writeFileSync(join(dir, "wrong.yaml"), "limits:\n  max_iterations: -1\n");
      writeFileSync(join(dir, "unknown.yaml"), "llm:\n  temprature: 0.2\n");
      expect(thrown(() => loadConfig({}, { path: join(dir, "broken.yaml") })).message).toMatch(/broken\.yaml: not valid YAML: /);
      expect(thrown(() => loadConfig({}, { path: join(dir, "wrong.yaml") })).message).toMatch(/wrong\.yaml: limits\.max_iterations = -1 is invalid/);
      expect(thrown(() => loadConfig({}, { path: join(dir, "unknown.yaml") })).message).toMatch(/unknown\.yaml: llm\.temprature = 0\.2 is invalid: unknown field/);
      expect(thrown(() => loadConfig({}, { path: join(dir, "missing.yaml") })).message).toMatch(/missing\.yaml" is invalid: no such file/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("bad machine options name the option and the fix", () => {
    const model = scriptedModel([]);
    expect(thrown(() => createReactMachine({} as never))).toBeInstanceOf(MachineOptionsError);
    expect(thrown(() => createReactMachine({ modelClient: model, name: "has spaces" })).message).toMatch(/options\.name must start with a letter/);
    expect(thrown(() => createReactMachine({ modelClient: model, tools: echo as never })).message).toMatch(/options\.tools must be an array/);
    expect(thrown(() => createReactMachine({ modelClient: model, constraints: ["allow"] as never })).message).toMatch(/options\.constraints\[0\] must be a guard function/);
    expect(thrown(() => createReactMachine({ modelClient: model, journal: {} as never })).message).toMatch(/options\.journal must implement ToolJournal/);
  });

  it("bad model client options name each field, and never echo the key given with them", () => {
    const key = "sk-bad-options-DO-NOT-ECHO-0123456789";
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ baseURL: "not a url", apiKey: key }, /baseURL: must be an http\(s\) URL/],
      [{ baseURL: "ftp://example.com/v1", apiKey: key }, /baseURL: must be an http\(s\) URL/],
      [{ apiKey: "" }, /apiKey: must be a non-empty string/],
      [{ apiKey: key, timeoutMs: 0 }, /timeoutMs: must be more than 0 milliseconds/],
      [{ apiKey: key, resilience: { maxRetries: -1 } }, /resilience\.maxRetries/],
      [{ apiKey: key, fallbacks: [{ baseURL: "nope" }] }, /fallbacks\[0\]\.baseURL: must be an http\(s\) URL/],
      [{ apiKey: key, temperature: 0.5 }, /unknown option "temperature": remove it/],
      [{ baseURL: `https://user:${key}@example.com/v1` }, /baseURL: must not contain a user or password/],
    ];
    for (const [options, message] of cases) {
      const error = thrown(() => resolveModelClient(options as never));
      expect(error).toBeInstanceOf(ModelClientOptionsError);
      expect(error.message).toMatch(message);
      expect(`${error.message}\n${error.stack}`).not.toContain(key);
    }
  });
});

describe("invalid tool definitions", () => {
  const model = scriptedModel([]);
  const rawTool = (overrides: Partial<Record<keyof Tool, unknown>>): Tool =>
    ({
      name: "raw",
      description: "A tool written by hand",
      inputSchema: { type: "object", properties: {} },
      parallelSafe: false,
      effectTags: [],
      validate: (args: unknown) => ({ ok: true, value: args as Record<string, unknown> }),
      execute: () => "ok",
      ...overrides,
    }) as Tool;

  it("defineTool refuses what the model API would reject, naming the field", () => {
    const base = { description: "d", parameters: z.object({}), execute: () => "x" };
    expect(thrown(() => defineTool({ ...base, name: "has space" })).message).toMatch(/tool "has space": name must be 1-64 characters/);
    expect(thrown(() => defineTool({ ...base, name: "x".repeat(65) })).message).toMatch(/name must be 1-64 characters/);
    expect(thrown(() => defineTool({ ...base, name: "ok", description: " " })).message).toMatch(/description must be a non-empty string/);
    expect(thrown(() => defineTool({ ...base, name: "ok", parameters: z.string() as never })).message).toMatch(/parameters must be a zod object schema/);
    expect(thrown(() => defineTool({ ...base, name: "ok", timeoutMs: -1 })).message).toMatch(/timeoutMs must be a positive number/);
    expect(thrown(() => defineTool({ ...base, name: "ok", execute: "run" as never })).message).toMatch(/execute must be a function/);
  });

  it("two static tools with one name are refused when the machine is built", () => {
    const error = thrown(() => createReactMachine({ modelClient: model, tools: [echo, echo] }));
    expect(error).toBeInstanceOf(ToolDefinitionError);
    expect(error.message).toBe('tool "echo": name is used by two static tools: give each tool a unique name');
  });

  it.each([
    [{ inputSchema: { type: "string" } }, /tool "raw": inputSchema must be a JSON Schema of type "object"/],
    [{ inputSchema: { type: "array", items: {} } }, /inputSchema must be a JSON Schema of type "object"/],
    [{ inputSchema: null }, /inputSchema must be a JSON Schema of type "object"/],
    [{ inputSchema: [] }, /inputSchema must be a JSON Schema of type "object"/],
    [{ name: "bad name!" }, /tool "bad name!": name must be 1-64 characters/],
    [{ execute: undefined }, /tool "raw": execute must be a function/],
    [{ validate: "yes" }, /tool "raw": validate must be a function/],
  ])("a hand-written static tool with %j is refused when the machine is built", (overrides, message) => {
    const error = thrown(() => createReactMachine({ modelClient: model, tools: [rawTool(overrides)] }));
    expect(error).toBeInstanceOf(ToolDefinitionError);
    expect(error.message).toMatch(message);
  });

  it("a provider offering a tool with a non-object schema or two tools of one name fails the run with toolProviderError, before any model call", async () => {
    const closed: string[] = [];
    const provider = (name: string, tools: Tool[]): ToolProvider => ({
      name,
      initialize: () => undefined,
      getTools: () => tools,
      close: () => void closed.push(name),
    });
    for (const [tools, message] of [
      [[rawTool({ inputSchema: { type: "string" } })], /tool provider "p" failed during getTools: tool "raw": inputSchema must be a JSON Schema of type "object"/],
      [[rawTool({}), rawTool({})], /tool provider "p" failed during getTools: tool "raw": name is offered twice by this provider/],
    ] as const) {
      const scripted = scriptedModel([{ content: "never" }]);
      const output = await runAgent(createReactMachine({ modelClient: scripted, toolProviders: [provider("p", [...tools])] }), { messages: [human("hi")] });
      expect(output.status).toBe("failed");
      expect(output.termination?.reason).toBe("toolProviderError");
      expect(output.termination?.error?.message).toMatch(message);
      expect(scripted.requests).toHaveLength(0);
    }
    expect(closed).toEqual(["p", "p"]);
  });

  it("ToolSet.withTools applies the same checks to tools added later", () => {
    expect(thrown(() => ToolSet.empty().withTools([rawTool({ inputSchema: { type: "number" } })]))).toBeInstanceOf(ToolDefinitionError);
  });
});

describe("invalid input to a run", () => {
  const cases: [string, unknown, RegExp, (new (...args: never[]) => Error) | undefined][] = [
    ["a message with an unknown role", { messages: [{ role: "robot", content: "hi" }] }, /^input\.messages\.0\.role: /, AgentInputError],
    ["a message whose content is not text", { messages: [{ role: "user", content: 42 }] }, /^input\.messages\.0\.content: /, AgentInputError],
    ["messages that are not a list", { messages: "hello" }, /^input\.messages: /, AgentInputError],
    ["a tool message without the call id it answers", { messages: [{ role: "tool", content: "x" }] }, /^input\.messages\.0\.toolCallId: /, AgentInputError],
    ["tool call arguments given as an object", { messages: [{ role: "assistant", content: null, toolCalls: [{ id: "c", name: "echo", arguments: {} }] }] }, /^input\.messages\.0\.toolCalls\.0\.arguments: /, AgentInputError],
    ["an unknown input field", { prompt: "hi" }, /^input: .*prompt/, AgentInputError],
    ["a run id that is empty", { runId: "" }, /^input\.runId: /, AgentInputError],
    ["state that is not plain JSON", { state: { when: new Date(0) } }, /^state\.when: is a Date object; state must be plain JSON/, StateError],
    ["state with a number JSON cannot keep", { state: { score: Number.NaN } }, /^state\.score: is NaN; only finite numbers survive JSON/, StateError],
    ["an agent field of the wrong type", { state: { rounds: "three" } }, /^state\.rounds: .*fix the value you pass in input\.state/, StateError],
  ];

  it.each(cases)("%s: runAgent rejects with an error naming the field; the model is never called", async (_label, input, message, type) => {
    const model = scriptedModel([{ content: "never" }]);
    const machine = createReactMachine({ modelClient: model, tools: [echo] });
    const error = await rejection(runAgent(machine, input as never));
    if (type) expect(error).toBeInstanceOf(type);
    expect(error.message).toMatch(message);
    expect(model.requests).toHaveLength(0);
  });
});

describe("unknown and malformed events sent to a running agent", () => {
  const junk: unknown[] = [
    { type: "no.such.event" },
    { type: "" },
    { type: "guard.approve" },
    { type: "guard.approve", callId: 42, args: 17 },
    { type: "guard.approve", callId: "call_1", args: '{"text": ' },
    { type: "guard.approve", callId: "call_1", args: { text: 5 } },
    { type: "guard.reject", callId: null },
    { type: "guard.reject", callId: "nobody" },
    // The agent's own internal events, forged from outside with nonsense payloads.
    { type: "llm.progress" },
    { type: "llm.progress", progress: null },
    { type: "llm.progress", progress: [{ at: 1, event: null }] },
    { type: "tool.progress", progress: 7 },
    { type: "tool.progress", progress: [{ event: { type: "tool.call.started" } }] },
    { type: "tools.ready", tools: "junk" },
  ];

  it("parked in AwaitingApproval: the state and context stay exactly as they were, and the run still finishes", async () => {
    const watch = watchProcess();
    const model = scriptedModel([{ toolCalls: [{ id: "call_1", name: "echo", arguments: { text: "hi" } }] }, { content: "done" }]);
    const machine = createReactMachine({ modelClient: model, tools: [echo], constraints: [() => ({ decision: "pending" })] });
    const actor = createActor(machine, { input: { messages: [human("go")] } });
    const refused: string[] = [];
    actor.on("guard.approval.refused", (event) => refused.push(event.reason));
    actor.start();
    await new Promise<void>((resolve) => {
      const sub = actor.subscribe((s) => {
        if (s.matches({ Evaluating: { ChildRunning: { ToolExecutor: "AwaitingApproval" } } } as never)) {
          queueMicrotask(() => sub.unsubscribe());
          resolve();
        }
      });
    });
    const before = JSON.stringify(actor.getPersistedSnapshot());
    for (const event of junk) actor.send(event as never);
    expect(actor.getSnapshot().status).toBe("active");
    expect(JSON.stringify(actor.getPersistedSnapshot())).toBe(before);
    // Every approval-shaped event that could not apply was answered with a reason.
    expect(refused).toHaveLength(6);
    expect(refused).toContain('no call with id "nobody" is waiting for approval');
    expect(refused).toContain("the edited arguments are not valid JSON");

    actor.send({ type: "guard.approve", callId: "call_1" });
    await new Promise<void>((resolve) => actor.subscribe({ complete: resolve }));
    expect(actor.getSnapshot().output).toMatchObject({ status: "succeeded", finalAnswer: "done" });
    await watch.stop();
    expect(watch.rejections).toEqual([]);
    expect(watch.consoleLines).toEqual([]);
  });

  it("while the tools start and while the model call is in flight: forged internal events neither crash the agent nor change its state", async () => {
    const watch = watchProcess();
    const model = scriptedModel([{ content: "slow answer", delayMs: 30 }]);
    const machine = createReactMachine({ modelClient: model, tools: [echo] });
    const actor = createActor(machine, { input: { messages: [human("go")] } });
    const done = new Promise<void>((resolve, reject) => actor.subscribe({ complete: resolve, error: reject }));
    const calling = new Promise<void>((resolve) => actor.on("model.call.started", () => resolve()));
    const sendAll = () => {
      const before = JSON.stringify(actor.getPersistedSnapshot());
      for (const event of junk) actor.send(event as never);
      actor.send({ type: "tools.failed" } as never);
      expect(actor.getSnapshot().status).toBe("active");
      expect(JSON.stringify(actor.getPersistedSnapshot())).toBe(before);
    };
    actor.start();
    expect(actor.getSnapshot().value).toBe("Initialising");
    sendAll();
    await calling;
    expect(actor.getSnapshot().value).toEqual({ Evaluating: { ChildRunning: "AgentLLM" } });
    sendAll();
    await done;
    expect(actor.getSnapshot().output).toMatchObject({ status: "succeeded", finalAnswer: "slow answer" });
    await watch.stop();
    expect(watch.rejections).toEqual([]);
  });
});

describe("tool outputs larger than maxToolOutputChars", () => {
  it("are cut with a marker saying how much was left out: text, JSON values and error messages alike", async () => {
    const tools = [
      defineTool({ name: "long_text", description: "d", parameters: z.object({}), execute: () => "a".repeat(10_000) }),
      defineTool({ name: "long_json", description: "d", parameters: z.object({}), execute: () => ({ rows: Array.from({ length: 2_000 }, (_, i) => i) }) }),
      defineTool({
        name: "long_error",
        description: "d",
        parameters: z.object({}),
        execute: () => {
          throw new Error(`stack overflow ${"!".repeat(10_000)}`);
        },
      }),
      defineTool({ name: "short", description: "d", parameters: z.object({}), execute: () => "b".repeat(150) }),
    ];
    const model = scriptedModel([{ toolCalls: tools.map((t, i) => ({ id: `c${i}`, name: t.name, arguments: {} })) }, { content: "ok" }]);
    const output = await runAgent(createReactMachine({ modelClient: model, tools, config: { maxToolOutputChars: 150 } }), { messages: [human("go")] });
    const observations = output.messages.filter((m) => m.role === "tool").map((m) => m.content);
    expect(observations[0]).toBe(`${"a".repeat(150)}\n[output truncated: 9850 of 10000 characters omitted]`);
    expect(observations[1]).toMatch(/^\{"rows":\[0,1,2,.{100,}\n\[output truncated: \d+ of \d+ characters omitted\]$/);
    expect(observations[2]).toMatch(/^Error: long_error failed: stack overflow !{100,}\n\[output truncated: \d+ of 10034 characters omitted\]$/);
    expect(observations[2]!.length).toBeLessThan(260);
    expect(observations[3]).toBe("b".repeat(150));
    // The model's next prompt carries the cut text, not the whole.
    const prompt = model.requests[1]!.messages.filter((m) => m.role === "tool").map((m) => m.content);
    expect(prompt).toEqual(observations);
  });
});
