import { describe, expect, it } from "vitest";
import { z } from "zod";
import { requireApproval } from "../../actors/guards/index.js";
import { human } from "../../actors/messages.js";
import { pendingApprovals, type ApprovalRequest } from "../../machines/contract/approvals.js";
import { AgentOutputSchema } from "../../machines/contract/agent-output.js";
import { agentTool } from "../../machines/composition/agent-tool.js";
import { MemoryCheckpointStore } from "../../machines/persistence/checkpoints/memory-store.js";
import { persistAgent, restoreAgent } from "../../machines/persistence/persistence.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { runAgent } from "../../machines/runner.js";
import { scriptedModel } from "../../testing/scripted-model.js";
import { defineTool } from "../../tools/tool.js";
import { nextEvent, startAgent } from "./helpers.js";

/** A refund tool gated by approval, and the refunds it made. */
function refunds() {
  const made: { order: string; amountEur: number }[] = [];
  const tool = defineTool({
    name: "refund_order",
    description: "Refund an order",
    parameters: z.object({ order: z.string(), amountEur: z.number().positive() }),
    effectTags: ["payment"],
    execute: ({ order, amountEur }) => {
      made.push({ order, amountEur });
      return `refunded EUR ${amountEur} for ${order}`;
    },
  });
  return { made, tool };
}

const REFUND_CALL = { toolCalls: [{ id: "call_refund", name: "refund_order", arguments: { order: "A-98", amountEur: 40 } }] };
const refundScript = () => scriptedModel([REFUND_CALL, { content: "Refunded." }]);
/** The model's part after a restore: the refund call was made before the save. */
const afterRestore = () => scriptedModel([{ content: "Refunded." }]);

function shop(journal?: MemoryCheckpointStore, model = refundScript()) {
  const { made, tool } = refunds();
  const machine = createReactMachine({
    name: "Shop",
    modelClient: model,
    tools: [tool],
    constraints: [requireApproval({ effectTags: ["payment"], reason: "refunds need a person" })],
    ...(journal ? { journal } : {}),
  });
  return { machine, made, model };
}

const WAITING_REFUND = { callId: "call_refund", name: "refund_order", arguments: '{"order":"A-98","amountEur":40}', reason: "refunds need a person" };

describe("runAgent never hangs on a person", () => {
  it("without onApproval, resolves awaitingApproval with the run id and the waiting calls, running nothing", async () => {
    const { machine, made } = shop();
    const output = await runAgent(machine, { messages: [human("refund A-98")] });
    expect(output.status).toBe("awaitingApproval");
    expect(output.pendingApprovals).toEqual([WAITING_REFUND]);
    expect(output.runId).toMatch(/.+/);
    expect(output.finalAnswer).toBeNull();
    expect(output.rounds).toBe(1);
    expect(output.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
    expect(made).toEqual([]);
    // The output schema holds it (the queue and the web protocol check outputs with it).
    expect(AgentOutputSchema.parse(JSON.parse(JSON.stringify(output)))).toEqual(JSON.parse(JSON.stringify(output)));
  });

  it("with checkpoints, saves the run first; runAgent({ snapshot, onApproval }) then finishes it", async () => {
    const store = new MemoryCheckpointStore();
    const first = shop(store);
    const parked = await runAgent(first.machine, { messages: [human("refund A-98")] }, { checkpoints: store });
    expect(parked.status).toBe("awaitingApproval");
    expect(store.list()).toEqual([expect.objectContaining({ runId: parked.runId, status: "awaitingApproval", machine: "Shop" })]);

    // "Later": a machine built the same way, the run restored from the store and answered.
    const second = shop(store, afterRestore());
    const asked: ApprovalRequest[] = [];
    const output = await runAgent(second.machine, undefined, {
      snapshot: restoreAgent(second.machine, store.load(parked.runId)),
      checkpoints: store,
      onApproval: (request) => {
        asked.push(request);
        return { approve: true };
      },
    });
    expect(asked).toEqual([WAITING_REFUND]);
    expect(output.status).toBe("succeeded");
    expect(output.runId).toBe(parked.runId);
    expect(output.finalAnswer).toBe("Refunded.");
    expect(second.made).toEqual([{ order: "A-98", amountEur: 40 }]);
    // One model call before the save, one after: the restore did not ask the model again.
    expect(first.model.requests).toHaveLength(1);
    expect(second.model.requests).toHaveLength(1);
  });

  it("the saved run itself (store.load) is a snapshot runAgent takes: it is restored, and one saved by another machine is refused by name", async () => {
    const store = new MemoryCheckpointStore();
    const first = shop(store);
    const parked = await runAgent(first.machine, { messages: [human("refund A-98")] }, { checkpoints: store });
    const saved = store.load(parked.runId)!;
    const second = shop(store, afterRestore());
    const output = await runAgent(second.machine, undefined, { snapshot: saved, checkpoints: store, onApproval: () => ({ approve: true }) });
    expect(output).toMatchObject({ status: "succeeded", runId: parked.runId, finalAnswer: "Refunded." });
    expect(second.made).toEqual([{ order: "A-98", amountEur: 40 }]);

    const other = createReactMachine({ name: "Other", modelClient: afterRestore(), tools: [refunds().tool] });
    await expect(runAgent(other, undefined, { snapshot: saved })).rejects.toMatchObject({ name: "SnapshotError", problem: "machine", message: expect.stringContaining('saved by machine "Shop"') });
  });

  it("restoring the parked run without onApproval hands it back again, unchanged", async () => {
    const store = new MemoryCheckpointStore();
    const { machine } = shop(store);
    const parked = await runAgent(machine, { messages: [human("refund A-98")] }, { checkpoints: store });
    const again = await runAgent(machine, undefined, { snapshot: restoreAgent(machine, store.load(parked.runId)) });
    expect(again).toMatchObject({ status: "awaitingApproval", runId: parked.runId, pendingApprovals: [WAITING_REFUND] });
  });

  it("a call with an approval deadline keeps the run going: the timer decides it", async () => {
    const { made, tool } = refunds();
    const machine = createReactMachine({
      modelClient: refundScript(),
      tools: [tool],
      constraints: [requireApproval({ effectTags: ["payment"], timeoutMs: 30 })],
    });
    const output = await runAgent(machine, { messages: [human("refund A-98")] });
    expect(output.status).toBe("succeeded");
    expect(made).toEqual([]);
    expect(output.messages.find((m) => m.role === "tool")?.content).toContain("no approval arrived before the deadline");
  });

  it("a nested agent's waiting call comes back with its agentPath; answering it by path finishes the run", async () => {
    const store = new MemoryCheckpointStore();
    const build = (restored: boolean) => {
      const { made, tool } = refunds();
      const billing = createReactMachine({ name: "Billing", modelClient: restored ? afterRestore() : refundScript(), tools: [tool], constraints: [requireApproval({ effectTags: ["payment"] })] });
      const askBilling = { toolCalls: [{ id: "call_billing", name: "billing", arguments: { input: "refund A-98" } }] };
      const desk = createReactMachine({
        name: "Desk",
        modelClient: scriptedModel(restored ? [{ content: "Billing refunded it." }] : [askBilling, { content: "Billing refunded it." }]),
        tools: [agentTool(billing, { name: "billing", description: "Ask billing" })],
        journal: store,
      });
      return { desk, made };
    };
    const first = build(false);
    const parked = await runAgent(first.desk, { messages: [human("refund A-98")] }, { checkpoints: store });
    expect(parked.status).toBe("awaitingApproval");
    expect(parked.pendingApprovals).toEqual([expect.objectContaining({ callId: "call_refund", name: "refund_order", agentPath: [{ agent: "Billing", callId: "call_billing" }] })]);

    const second = build(true);
    const output = await runAgent(second.desk, undefined, { snapshot: restoreAgent(second.desk, store.load(parked.runId)), onApproval: () => ({ approve: true }) });
    expect(output.status).toBe("succeeded");
    expect(second.made).toEqual([{ order: "A-98", amountEur: 40 }]);
  });
});

describe("onApproval is asked again when its answer is refused", () => {
  it("an edit that does not fit the tool is asked again with the refusal's reason; the corrected edit runs", async () => {
    const { machine, made } = shop();
    const asked: ApprovalRequest[] = [];
    const output = await runAgent(machine, { messages: [human("refund A-98")] }, {
      onApproval: (request) => {
        asked.push(request);
        return { approve: true, args: { order: "A-98", amountEur: request.refusal === undefined ? -5 : 35 } };
      },
    });
    expect(asked).toHaveLength(2);
    expect(asked[0]!.refusal).toBeUndefined();
    expect(asked[1]!.refusal).toMatch(/amountEur/);
    expect(asked[1]).toMatchObject(WAITING_REFUND);
    expect(output.status).toBe("succeeded");
    expect(made).toEqual([{ order: "A-98", amountEur: 35 }]);
  });

  it("after 3 refused answers the call is rejected, the refusal's reason as its observation", async () => {
    const { machine, made } = shop();
    const refusals: (string | undefined)[] = [];
    const output = await runAgent(machine, { messages: [human("refund A-98")] }, {
      onApproval: (request) => {
        refusals.push(request.refusal);
        return { approve: true, args: "{not json" };
      },
    });
    expect(refusals).toHaveLength(3);
    expect(refusals[0]).toBeUndefined();
    expect(refusals[1]).toBe(refusals[2]);
    expect(output.status).toBe("succeeded");
    expect(made).toEqual([]);
    const observation = output.messages.find((m) => m.role === "tool")?.content;
    expect(observation).toBe(`Call rejected: ${refusals[2]}`);
  });
});

describe("a cancelled run waits on nothing", () => {
  it("lists no pending approvals, and runAgent({ snapshot, onApproval }) does not ask about it", async () => {
    const { machine, made } = shop();
    const { actor, done } = startAgent(machine, { messages: [human("refund A-98")] });
    await nextEvent(actor, "guard.approval.requested");
    expect(pendingApprovals(actor.getSnapshot())).toHaveLength(1);
    actor.send({ type: "agent.cancel", reason: "the customer withdrew" });
    const cancelled = await done;
    expect(cancelled.termination?.reason).toBe("cancelled");
    expect(pendingApprovals(actor.getSnapshot())).toEqual([]);

    const saved = JSON.parse(JSON.stringify(persistAgent(actor))) as unknown;
    const asked: ApprovalRequest[] = [];
    const output = await runAgent(machine, undefined, { snapshot: restoreAgent(machine, saved), onApproval: (request) => (asked.push(request), { approve: true }) });
    expect(asked).toEqual([]);
    expect(output.status).toBe("failed");
    expect(made).toEqual([]);
  });
});
