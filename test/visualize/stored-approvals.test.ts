import { describe, expect, it } from "vitest";
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
  });
});
