import { describe, expect, it } from "vitest";
import { agentTool } from "../../machines/composition/agent-tool.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { requireApproval } from "../../actors/guards/index.js";
import { scriptedModel } from "../../testing/scripted-model.js";
import { approvalCheckpoints, approvalsIn } from "../../visualize/stored-approvals.js";

/** A checkpoint's snapshot as far as the count reads it. */
const saved = (iteration: number, decisions: { callId: string; status: string }[]) => ({ context: { loop: { iteration, decisions: decisions.map((d) => ({ name: "pay", ...d })) } } });

describe("a stored run's approvals, from its checkpoints", () => {
  it("counts each call put to a person once, with its last decision; calls the guard allowed are not approvals", () => {
    const counted = approvalsIn([
      saved(0, [{ callId: "a", status: "allowed" }, { callId: "b", status: "pending" }, { callId: "c", status: "pending" }]),
      saved(0, [{ callId: "a", status: "allowed" }, { callId: "b", status: "approved" }, { callId: "c", status: "pending" }]),
      saved(0, [{ callId: "a", status: "allowed" }, { callId: "b", status: "approved" }, { callId: "c", status: "rejected" }]),
    ]);
    expect(counted).toEqual({ asked: 2, approved: 1, rejected: 1 });
  });

  it("a call still waiting was asked and not decided; the same call id in a later round is another approval", () => {
    const counted = approvalsIn([saved(0, [{ callId: "call_0", status: "pending" }]), saved(0, [{ callId: "call_0", status: "approved" }]), saved(1, [{ callId: "call_0", status: "pending" }])]);
    expect(counted).toEqual({ asked: 2, approved: 1, rejected: 0 });
    expect(approvalsIn([undefined, {}])).toEqual({ asked: 0, approved: 0, rejected: 0 });
  });

  it("counts a nested agent's approvals too, kept in its caller's checkpoints; a second call of it is another agent", () => {
    const withNested = (outer: number, inner: ReturnType<typeof saved>) => ({ ...saved(outer, []), children: { "Writer.agent": { snapshot: inner }, "ReActAgent.steps": { snapshot: { status: "active" } } } });
    const counted = approvalsIn([
      withNested(0, saved(0, [{ callId: "call_0", status: "pending" }])),
      withNested(0, saved(0, [{ callId: "call_0", status: "approved" }])),
      withNested(1, saved(0, [{ callId: "call_0", status: "pending" }])),
      withNested(1, saved(0, [{ callId: "call_0", status: "rejected" }])),
    ]);
    expect(counted).toEqual({ asked: 2, approved: 1, rejected: 1 });
  });

  it("reads the checkpoints saved while the run waited for a person, and the one after each (where the last decision shows)", () => {
    const machine = createReactMachine({ modelClient: scriptedModel([]), constraints: [requireApproval({ tools: ["pay"] })], configFile: false });
    const history = [
      { checkpointId: "1", state: "Evaluating.ChildRunning.AgentLLM" },
      { checkpointId: "2", state: "Evaluating.ChildRunning.ToolExecutor.AwaitingApproval" },
      { checkpointId: "3", state: "Evaluating.ChildRunning.ToolExecutor.AwaitingApproval" },
      { checkpointId: "4", state: "Evaluating.ChildRunning.ToolExecutor.Executing" },
      { checkpointId: "5", state: "Evaluating.ChildRunning.AgentLLM" },
      { checkpointId: "6", state: "Succeeded" },
    ];
    expect(approvalCheckpoints(machine, history)).toEqual(["2", "3", "4"]);
    // While a nested agent runs, every save of its caller may hold one of its waits.
    const writer = createReactMachine({ name: "Writer", modelClient: scriptedModel([]), configFile: false });
    const caller = createReactMachine({ modelClient: scriptedModel([]), tools: [agentTool(writer, { name: "ask_writer", description: "Ask the writer" })], configFile: false });
    const delegating = [
      { checkpointId: "1", state: "Evaluating.ChildRunning.AgentLLM" },
      { checkpointId: "2", state: "Evaluating.ChildRunning.ToolExecutor.Delegating" },
      { checkpointId: "3", state: "Evaluating.ChildRunning.ToolExecutor.Delegating" },
      { checkpointId: "4", state: "Evaluating.ChildRunning.AgentLLM" },
    ];
    expect(approvalCheckpoints(caller, delegating)).toEqual(["2", "3"]);
  });
});
