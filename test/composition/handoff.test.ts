import { describe, expect, it } from "vitest";
import { createActor } from "xstate";
import { human } from "../../actors/messages.js";
import { pendingApprovals } from "../../machines/contract/approvals.js";
import type { AgentEmitted } from "../../machines/contract/events.js";
import { handoff } from "../../machines/composition/handoff.js";
import { statePath } from "../../machines/persistence/persistence.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { runAgent } from "../../machines/runner.js";
import { scriptedModel } from "../../testing/scripted-model.js";
import { add } from "../core/helpers.js";

function triageAndSpecialist(options: { specialistTurns?: Parameters<typeof scriptedModel>[0]; triageTurns?: Parameters<typeof scriptedModel>[0]; approve?: boolean } = {}) {
  const specialistModel = scriptedModel(options.specialistTurns ?? [{ content: "Specialist: your refund is on its way.", usage: { promptTokens: 30, completionTokens: 10 } }]);
  const specialist = createReactMachine({
    name: "Specialist",
    modelClient: specialistModel,
    tools: [add],
    ...(options.approve ? { constraints: [(call: { name: string }) => (call.name === "add" ? { decision: "pending" as const } : { decision: "allow" as const })] } : {}),
    configFile: false,
  });
  const triageModel = scriptedModel(
    options.triageTurns ?? [{ content: "Let me pass you on.", toolCalls: [{ id: "h1", name: "transfer_to_Specialist", arguments: {} }], usage: { promptTokens: 20, completionTokens: 5 } }],
  );
  const triage = createReactMachine({ name: "Triage", modelClient: triageModel, tools: [add, handoff(specialist)], configFile: false });
  return { triage, triageModel, specialistModel };
}

describe("handoff", () => {
  it("ends the caller's own reasoning and continues the conversation in the other agent, as a state of the chart", async () => {
    const { triage, triageModel, specialistModel } = triageAndSpecialist();
    const actor = createActor(triage, { input: { messages: [human("I want a refund")] } });
    const events: AgentEmitted[] = [];
    const states: string[] = [];
    actor.on("*", (e) => events.push(e as AgentEmitted));
    actor.subscribe((s) => states.at(-1) !== statePath(s.value) && states.push(statePath(s.value)));
    const finished = new Promise<void>((resolve) => actor.subscribe({ complete: resolve }));
    actor.start();
    await finished;
    const output = actor.getSnapshot().output!;

    expect(output).toMatchObject({ status: "succeeded", finalAnswer: "Specialist: your refund is on its way." });
    expect(states).toContain("Evaluating.ChildRunning.ToolExecutor.HandingOff");
    expect(states.at(-1)).toBe("Succeeded");
    // Triage's model was asked once: after the handoff, the specialist answers.
    expect(triageModel.requests).toHaveLength(1);
    // The whole conversation went over, the handoff call answered.
    expect(specialistModel.requests[0]!.messages.filter((m) => m.role !== "system")).toEqual([
      { role: "user", content: "I want a refund" },
      { role: "assistant", content: "Let me pass you on.", toolCalls: [{ id: "h1", name: "transfer_to_Specialist", arguments: "{}" }] },
      expect.objectContaining({ role: "tool", toolCallId: "h1", content: expect.stringMatching(/^Transferred to Specialist/) }),
    ]);
    // ... and the specialist's answer came back into the caller's conversation.
    expect(output.messages.at(-1)).toEqual({ role: "assistant", content: "Specialist: your refund is on its way." });
    expect(output.usage.totalTokens).toBe(65);
    expect(events.find((e) => e.type === "agent.handoff")).toMatchObject({ agent: "Triage", callId: "h1", name: "transfer_to_Specialist", from: "Triage", to: "Specialist", messages: 3 });
    expect(events.filter((e) => e.type === "loop.terminated").map((e) => [e.agent, e.agentPath])).toEqual([
      ["Specialist", [{ agent: "Specialist", callId: "h1" }]],
      ["Triage", undefined],
    ]);
  });

  it("other calls of the reply run first; a second handoff in the same reply is refused", async () => {
    const { triage, specialistModel } = triageAndSpecialist({
      triageTurns: [
        {
          toolCalls: [
            { id: "a1", name: "add", arguments: { a: 1, b: 2 } },
            { id: "h1", name: "transfer_to_Specialist", arguments: {} },
            { id: "h2", name: "transfer_to_Specialist", arguments: {} },
          ],
        },
      ],
    });
    const output = await runAgent(triage, { messages: [human("hi")] });
    expect(output.finalAnswer).toBe("Specialist: your refund is on its way.");
    const tools = specialistModel.requests[0]!.messages.filter((m) => m.role === "tool");
    expect(tools.map((m) => [m.toolCallId, m.content.slice(0, 20)])).toEqual([
      ["a1", "3"],
      ["h1", "Transferred to Speci"],
      ["h2", "Error: only one hand"],
    ]);
  });

  it("a failing target fails the run with reason handoffFailed", async () => {
    const { triage } = triageAndSpecialist({ specialistTurns: [new Error("specialist model down")] });
    const output = await runAgent(triage, { messages: [human("hi")] });
    expect(output.status).toBe("failed");
    expect(output.termination).toMatchObject({ reason: "handoffFailed", detail: expect.stringMatching(/^Specialist failed \(modelError: .*specialist model down/) });
  });

  it("approvals inside the target bubble up to the caller", async () => {
    const { triage } = triageAndSpecialist({
      approve: true,
      specialistTurns: [{ toolCalls: [{ id: "s1", name: "add", arguments: { a: 2, b: 2 } }] }, { content: "Specialist: 4" }],
    });
    const actor = createActor(triage, { input: { messages: [human("hi")] } });
    actor.start();
    const waiting = await new Promise<ReturnType<typeof actor.getSnapshot>>((resolve) => {
      const sub = actor.subscribe((s) => {
        if (pendingApprovals(s).length > 0) {
          queueMicrotask(() => sub.unsubscribe());
          resolve(s);
        }
      });
    });
    expect(waiting.matches({ Evaluating: { ChildRunning: { ToolExecutor: "AwaitingApproval" } } })).toBe(true);
    expect(pendingApprovals(waiting)).toEqual([expect.objectContaining({ callId: "s1", agentPath: [{ agent: "Specialist", callId: "h1" }] })]);
    const done = new Promise<void>((resolve) => actor.subscribe({ complete: resolve }));
    actor.send({ type: "guard.approve", callId: "s1" });
    await done;
    expect(actor.getSnapshot().output).toMatchObject({ status: "succeeded", finalAnswer: "Specialist: 4" });
  });
});
