import { createActor } from "xstate";
import { afterEach, describe, expect, it, vi } from "vitest";
import { human } from "../../actors/messages.js";
import type { AgentEmitted } from "../../machines/contract/events.js";
import { createReactMachine, toolProvidersClosed } from "../../machines/react-machine.js";
import { runAgent } from "../../machines/runner.js";
import { scriptedModel } from "../../testing/scripted-model.js";
import { everything, fixture, isRunning } from "./helpers.js";

/** A long call on the real server: 30 s in one step, far longer than any test waits. */
const longCall = { id: "call_long", name: "trigger-long-running-operation", arguments: { duration: 30, steps: 1 } };

/** XState warns when an event reaches an actor that already stopped: a call winding down must not report to it. */
const warnings = () => vi.mocked(console.warn).mock.calls.map((args) => String(args[0])).filter((text) => text.includes("stopped actor"));

describe("provider lifecycle owned by the agent", () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });
  it("starts the servers before the first model call and ends them after a successful run", async () => {
    const first = everything();
    const second = fixture();
    const seenBeforeModel: boolean[] = [];
    const model = scriptedModel([{ content: "hi" }]);
    const probing = {
      ...model,
      complete: (...args: Parameters<typeof model.complete>) => {
        seenBeforeModel.push(isRunning(first.pid!) && isRunning(second.pid!));
        return model.complete(...args);
      },
    };
    const machine = createReactMachine({ modelClient: probing, toolProviders: [first, second] });
    const output = await runAgent(machine, { messages: [human("hi")] });
    expect(output.status).toBe("succeeded");
    expect(seenBeforeModel).toEqual([true]);
    expect(isRunning(first.pid!)).toBe(false);
    expect(isRunning(second.pid!)).toBe(false);
  });

  it("ends the servers when the run is cancelled during a tool call", async () => {
    vi.spyOn(console, "warn");
    const provider = everything();
    const model = scriptedModel([{ toolCalls: [longCall] }, { content: "never reached" }]);
    const machine = createReactMachine({ modelClient: model, toolProviders: [provider] });
    const controller = new AbortController();
    const events: AgentEmitted[] = [];
    const output = await runAgent(machine, { messages: [human("wait")] }, {
      signal: controller.signal,
      onEvent: (event) => {
        events.push(event);
        if (event.type === "tool.call.started") controller.abort();
      },
    });
    expect(output.status).toBe("failed");
    expect(output.termination?.reason).toBe("cancelled");
    expect(events.some((e) => e.type === "tool.call.completed")).toBe(false);
    expect(isRunning(provider.pid!)).toBe(false);
    expect(warnings()).toEqual([]);
  });

  it("ends the servers when the run is cancelled while they are still starting", async () => {
    const provider = everything();
    const model = scriptedModel([{ content: "never asked" }]);
    const machine = createReactMachine({ modelClient: model, toolProviders: [provider] });
    const output = await runAgent(machine, { messages: [human("hi")] }, { signal: AbortSignal.abort() });
    expect(output.termination?.reason).toBe("cancelled");
    expect(model.requests).toHaveLength(0);
    // The start was under way (the process was spawned) and was closed once it finished.
    expect(provider.pid).toBeTypeOf("number");
    expect(isRunning(provider.pid!)).toBe(false);
  });

  it("ends the servers when the model fails", async () => {
    const provider = everything();
    const model = scriptedModel([new Error("upstream exploded")]);
    const machine = createReactMachine({ modelClient: model, toolProviders: [provider] });
    const output = await runAgent(machine, { messages: [human("hi")] });
    expect(output.termination).toMatchObject({ reason: "modelError", error: { message: "upstream exploded" } });
    expect(isRunning(provider.pid!)).toBe(false);
  });

  it("ends the servers when the actor is stopped mid-run", async () => {
    vi.spyOn(console, "warn");
    const provider = everything();
    const model = scriptedModel([{ toolCalls: [longCall] }]);
    const machine = createReactMachine({ modelClient: model, toolProviders: [provider] });
    const actor = createActor(machine, { input: { messages: [human("wait")] } });
    const started = new Promise<void>((resolve) => actor.on("tool.call.started", () => resolve()));
    actor.start();
    await started;
    const runId = actor.getSnapshot().context.loop.runId;
    expect(isRunning(provider.pid!)).toBe(true);
    actor.stop();
    await toolProvidersClosed(machine, runId);
    expect(isRunning(provider.pid!)).toBe(false);
    expect(warnings()).toEqual([]);
  });

  it("fails the run with toolProviderError naming the server that could not start, and ends the ones that did", async () => {
    const healthy = everything();
    const broken = fixture({ name: "broken-db", env: { FIXTURE_FAIL_START: "1" } });
    const model = scriptedModel([{ content: "never asked" }]);
    const machine = createReactMachine({ modelClient: model, toolProviders: [healthy, broken] });
    const output = await runAgent(machine, { messages: [human("hi")] });

    expect(output.status).toBe("failed");
    expect(output.termination?.reason).toBe("toolProviderError");
    expect(output.termination?.error).toMatchObject({ name: "ToolProviderError", provider: "broken-db" });
    expect(output.termination?.error?.message).toMatch(
      /^tool provider "broken-db" failed during initialize: MCP server "broken-db" could not be started: .*cannot open the database/,
    );
    expect(model.requests).toHaveLength(0);
    expect(isRunning(healthy.pid!)).toBe(false);
    expect(isRunning(broken.pid!)).toBe(false);
  });

  it("serves two runs of one machine at once from one server process, ended after both", async () => {
    const provider = everything();
    const model = scriptedModel([
      { toolCalls: [{ name: "echo", arguments: { message: "one" } }] },
      { toolCalls: [{ name: "echo", arguments: { message: "two" } }] },
      { content: "a" },
      { content: "b" },
    ]);
    const machine = createReactMachine({ modelClient: model, toolProviders: [provider] });
    const [a, b] = await Promise.all([runAgent(machine, { messages: [human("a")] }), runAgent(machine, { messages: [human("b")] })]);
    const echoes = [a, b].map((output) => output.messages.find((m) => m.role === "tool")?.content).sort();
    expect(echoes).toEqual(["Echo: one", "Echo: two"]);
    expect(isRunning(provider.pid!)).toBe(false);
  });
});
