import { describe, expect, it } from "vitest";
import { createActor } from "xstate";
import { z } from "zod";
import { human, type ToolMessage } from "../../actors/messages.js";
import { createReactMachine, toolProvidersClosed } from "../../machines/react-machine.js";
import { persistAgent, restoreAgent } from "../../machines/persistence/persistence.js";
import { runAgent } from "../../machines/runner.js";
import { scriptedModel } from "../../testing/scripted-model.js";
import type { ToolProvider } from "../../tools/provider.js";
import { defineTool } from "../../tools/tool.js";
import { approvalFor, awaitingApproval, collect, countingTool, done, waitFor } from "./helpers.js";

const askToRecord = { toolCalls: [{ id: "call_rec", name: "record", arguments: { note: "hello" } }] };

/** Run a fresh agent until it parks in AwaitingApproval and return the saved run as JSON text. */
async function parkForApproval(options: { config?: Parameters<typeof createReactMachine>[0]["config"] } = {}) {
  const model = scriptedModel([askToRecord]);
  const { tool, runs } = countingTool();
  const machine = createReactMachine({ modelClient: model, tools: [tool], constraints: [approvalFor("record")], ...options });
  const actor = createActor(machine, { input: { messages: [human("please record hello")] } });
  actor.start();
  await waitFor(actor, awaitingApproval);
  const saved = JSON.stringify(persistAgent(actor));
  actor.stop();
  return { saved, model, runs };
}

describe("restoring a run parked in AwaitingApproval", () => {
  it("finishes after the approval without calling the model again for round 1 or re-running anything", async () => {
    const first = await parkForApproval();
    expect(first.model.requests).toHaveLength(1);
    expect(first.runs).toEqual([]);

    // Everything new, as in another process: model, tool objects, machine, actor.
    const model = scriptedModel([{ content: "Recorded." }]);
    const { tool, runs } = countingTool();
    const machine = createReactMachine({ modelClient: model, tools: [tool], constraints: [approvalFor("record")] });
    const actor = createActor(machine, { snapshot: restoreAgent(machine, first.saved) });
    const events = collect(actor);
    actor.start();
    expect(awaitingApproval(actor.getSnapshot())).toBe(true);

    actor.send({ type: "guard.approve", callId: "call_rec" });
    const final = await waitFor(actor, done);

    expect(final.output).toMatchObject({ status: "succeeded", finalAnswer: "Recorded.", rounds: 2 });
    expect(runs).toEqual(["hello"]);
    expect(model.requests).toHaveLength(1);
    expect(model.remaining).toBe(0);
    const observation = final.output!.messages.find((m): m is ToolMessage => m.role === "tool");
    expect(observation).toMatchObject({ toolCallId: "call_rec", content: "recorded hello" });
    // The restored run reports the decision and the execution like a live one.
    expect(events.map((e) => e.type)).toEqual(
      expect.arrayContaining(["guard.approval.decided", "tool.call.started", "tool.call.completed", "loop.terminated"]),
    );
    // The model saw the whole conversation, including round 1's assistant turn from the snapshot.
    expect(model.requests[0]!.messages.map((m) => m.role)).toEqual(["system", "user", "assistant", "tool"]);
  });

  it("restarts the root tool providers, which initialize again in the new process", async () => {
    const initialized: string[] = [];
    const closed: string[] = [];
    const providerWith = (label: string, runs: string[]): ToolProvider<unknown> => ({
      name: "notes",
      initialize: () => {
        initialized.push(label);
      },
      getTools: () => [
        defineTool({
          name: "record",
          description: "Write a note",
          parameters: z.object({ note: z.string() }),
          execute: ({ note }) => {
            runs.push(`${label}:${note}`);
            return "ok";
          },
        }),
      ],
      close: () => {
        closed.push(label);
      },
    });
    const firstRuns: string[] = [];
    const first = createReactMachine({ modelClient: scriptedModel([askToRecord]), toolProviders: [providerWith("first", firstRuns)], constraints: [approvalFor("record")] });
    const parked = createActor(first, { input: { messages: [human("go")] } });
    parked.start();
    await waitFor(parked, awaitingApproval);
    const saved = JSON.stringify(persistAgent(parked));
    const children = Object.keys(JSON.parse(saved).snapshot.children);
    expect(children).toEqual(["ReActAgent.steps", "ReActAgent.toolProviders", "ReActAgent.approvalTimer"]);
    parked.stop();
    await toolProvidersClosed(first, JSON.parse(saved).runId);
    expect(closed).toEqual(["first"]);

    const secondRuns: string[] = [];
    const second = createReactMachine({
      modelClient: scriptedModel([{ content: "done" }]),
      toolProviders: [providerWith("second", secondRuns)],
      constraints: [approvalFor("record")],
    });
    const actor = createActor(second, { snapshot: restoreAgent(second, saved) });
    actor.start();
    actor.send({ type: "guard.approve", callId: "call_rec" });
    const final = await waitFor(actor, done);

    expect(final.output?.status).toBe("succeeded");
    expect(initialized).toEqual(["first", "second"]);
    expect(firstRuns).toEqual([]);
    expect(secondRuns).toEqual(["second:hello"]);
  });

  it("restarts the approval timer on the absolute deadline: past it, the call is rejected at once", async () => {
    const guard = approvalFor("record", { timeoutMs: 60_000 });
    let clock = 1_000_000;
    const now = () => clock;
    const machine = createReactMachine({ modelClient: scriptedModel([askToRecord]), tools: [countingTool().tool], constraints: [guard], now });
    const parked = createActor(machine, { input: { messages: [human("go")] } });
    parked.start();
    await waitFor(parked, awaitingApproval);
    const saved = persistAgent(parked);
    parked.stop();
    const timer = (saved.snapshot.children as Record<string, { snapshot: { input: unknown } }>)["ReActAgent.approvalTimer"]!;
    expect(timer.snapshot.input).toEqual({ deadline: 1_060_000 });

    // The new process starts after the deadline has passed: no minute-long wait, an immediate expiry.
    clock = 1_060_001;
    const { tool, runs } = countingTool();
    const model = scriptedModel([{ content: "Understood, not recorded." }]);
    const restoredMachine = createReactMachine({ modelClient: model, tools: [tool], constraints: [guard], now });
    const actor = createActor(restoredMachine, { snapshot: restoreAgent(restoredMachine, JSON.stringify(saved)) });
    const events = collect(actor);
    actor.start();
    const final = await waitFor(actor, done);

    expect(runs).toEqual([]);
    expect(events.find((e) => e.type === "tool.call.denied")).toMatchObject({ callId: "call_rec", decision: "rejected" });
    const observation = final.output!.messages.find((m): m is ToolMessage => m.role === "tool");
    expect(observation?.content).toMatch(/no approval arrived before the deadline/);
  });

  it("keeps run-lifetime fields: the first-round toolChoice is not sent again after a restore mid-run", async () => {
    const config = { toolChoice: "required" as const, extraParams: { tool_choice: "required", seed: 7 } };
    const first = await parkForApproval({ config });
    expect(first.model.requests[0]).toMatchObject({ toolChoice: "required", extraParams: { tool_choice: "required", seed: 7 } });

    const model = scriptedModel([{ content: "Recorded." }]);
    const machine = createReactMachine({ modelClient: model, tools: [countingTool().tool], constraints: [approvalFor("record")], config });
    const actor = createActor(machine, { snapshot: restoreAgent(machine, first.saved) });
    actor.start();
    actor.send({ type: "guard.approve", callId: "call_rec" });
    const final = await waitFor(actor, done);

    const round2 = model.requests[0]!;
    expect(round2.toolChoice).toBeUndefined();
    expect(round2.extraParams).toEqual({ seed: 7 });
    expect(final.output?.rounds).toBe(2);

    // A fresh run from the finished run's state resets `rounds`: its first round sends toolChoice again.
    const freshModel = scriptedModel([{ content: "Nothing to do." }]);
    const fresh = createReactMachine({ modelClient: freshModel, tools: [countingTool().tool], config });
    const output = await runAgent(fresh, { state: final.output!.state, messages: [human("anything else?")] });
    expect(output.rounds).toBe(1);
    expect(freshModel.requests[0]).toMatchObject({ toolChoice: "required", extraParams: { tool_choice: "required", seed: 7 } });
  });

  it("restores a finished run as finished, with its output", async () => {
    const machine = createReactMachine({ modelClient: scriptedModel([{ content: "hi" }]) });
    const actor = createActor(machine, { input: { messages: [human("hello")] } });
    actor.start();
    await waitFor(actor, done);
    const saved = persistAgent(actor);
    expect(saved).toMatchObject({ status: "succeeded", state: "Succeeded" });

    const again = createReactMachine({ modelClient: scriptedModel([]) });
    const restored = createActor(again, { snapshot: restoreAgent(again, JSON.stringify(saved)) });
    restored.start();
    expect(restored.getSnapshot().status).toBe("done");
    expect(restored.getSnapshot().output).toMatchObject({ status: "succeeded", finalAnswer: "hi" });
  });
});
