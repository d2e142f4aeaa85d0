import { describe, expect, it } from "vitest";
import { createActor } from "xstate";
import { human } from "../../actors/messages.js";
import { checkpointAgent } from "../../machines/persistence/checkpoints/checkpoint-agent.js";
import { MemoryCheckpointStore } from "../../machines/persistence/checkpoints/memory-store.js";
import { CheckpointError, type CheckpointStore } from "../../machines/persistence/checkpoints/store.js";
import { createReactMachine } from "../../machines/react-machine.js";
import type { PersistedAgent } from "../../machines/persistence/persistence.js";
import { runAgent } from "../../machines/runner.js";
import { scriptedModel } from "../../testing/scripted-model.js";
import { approvalFor, awaitingApproval, countingTool, done, waitFor } from "./helpers.js";

/** A memory store that also remembers every save, in order. */
class RecordingStore extends MemoryCheckpointStore {
  readonly saves: PersistedAgent[] = [];
  override save(runId: string, record: PersistedAgent): void {
    this.saves.push(record);
    super.save(runId, record);
  }
}

const moments = (store: RecordingStore) =>
  store.saves.map((r) => {
    const decisions = (r.snapshot.context as { loop: { decisions: { callId: string; status: string }[] } }).loop.decisions;
    const leaf = r.state.slice(r.state.lastIndexOf(".") + 1);
    return leaf === "AwaitingApproval" ? `${leaf}#${r.iteration} ${decisions.map((d) => `${d.callId}=${d.status}`).join(" ")}` : `${leaf}#${r.iteration}`;
  });

describe("checkpointAgent", () => {
  it("saves at every stable state and nowhere else (not per text delta or tool progress)", async () => {
    const store = new RecordingStore();
    // Slow enough (> 16 ms) that their progress reaches the agent while they run, as snapshots of their own.
    const { tool } = countingTool("record", { execute: (note) => new Promise((resolve) => setTimeout(() => resolve(`recorded ${note}`), 40)) });
    const model = scriptedModel([
      {
        delayMs: 40,
        content: "I will record two notes now, one after the other, as you asked me to.",
        toolCalls: [
          { id: "a", name: "record", arguments: { note: "one" } },
          { id: "b", name: "record", arguments: { note: "two" } },
        ],
      },
      { content: "Both notes are recorded and there is nothing else left to do here." },
    ]);
    const machine = createReactMachine({ modelClient: model, tools: [tool], constraints: [approvalFor("record")], journal: store });
    const actor = createActor(machine, { input: { messages: [human("record two notes")] } });
    const seen: string[] = [];
    actor.subscribe((snapshot) => seen.push(JSON.stringify(snapshot.value)));
    const handle = checkpointAgent(actor, store);
    actor.start();
    await waitFor(actor, awaitingApproval);
    actor.send({ type: "guard.approve", callId: "a" });
    actor.send({ type: "guard.reject", callId: "b", reason: "one is enough" });
    await waitFor(actor, done);
    await handle.flush();

    expect(moments(store)).toEqual([
      "AgentLLM#0",
      "AwaitingApproval#0 a=pending b=pending",
      "AwaitingApproval#0 a=approved b=pending",
      "Executing#0",
      "AgentLLM#1",
      "Succeeded#1",
    ]);
    expect(handle.saves).toBe(6);
    // Model and tool progress did produce snapshots in AgentLLM and Executing, saved once each.
    expect(seen.filter((value) => value.includes('"AgentLLM"')).length).toBeGreaterThan(2);
    expect(seen.filter((value) => value.includes('"Executing"')).length).toBeGreaterThan(1);
    expect(store.list()).toMatchObject([{ status: "succeeded", state: "Succeeded", iteration: 1 }]);
  });

  it("stop() ends the saving; the last checkpoint stays", async () => {
    const store = new RecordingStore();
    const machine = createReactMachine({
      modelClient: scriptedModel([{ toolCalls: [{ id: "a", name: "record", arguments: { note: "x" } }] }]),
      tools: [countingTool().tool],
      constraints: [approvalFor("record")],
    });
    const actor = createActor(machine, { input: {} });
    const handle = checkpointAgent(actor, store);
    actor.start();
    await waitFor(actor, awaitingApproval);
    handle.stop();
    actor.send({ type: "guard.reject", callId: "a" });
    actor.stop();
    expect(moments(store)).toEqual(["AgentLLM#0", "AwaitingApproval#0 a=pending"]);
  });

  it("queues saves to an asynchronous store in order", async () => {
    const saved: string[] = [];
    const slowStore: CheckpointStore = {
      save: (_runId, record) => new Promise<void>((resolve) => setTimeout(() => (saved.push(record.state), resolve()), 5)),
      load: () => undefined,
      list: () => [],
      delete: () => false,
    };
    const machine = createReactMachine({ modelClient: scriptedModel([{ toolCalls: [{ id: "a", name: "record", arguments: { note: "x" } }] }, { content: "ok" }]), tools: [countingTool().tool] });
    const output = await runAgent(machine, { messages: [human("go")] }, { checkpoints: slowStore });
    expect(output.status).toBe("succeeded");
    // runAgent resolved only after every save was stored.
    expect(saved).toEqual([
      "Evaluating.ChildRunning.AgentLLM",
      "Evaluating.ChildRunning.ToolExecutor.Executing",
      "Evaluating.ChildRunning.AgentLLM",
      "Succeeded",
    ]);
  });

  it("a failing store does not break the run; flush() and runAgent report it", async () => {
    const failing: CheckpointStore = {
      save: () => {
        throw new Error("database is locked");
      },
      load: () => undefined,
      list: () => [],
      delete: () => false,
    };
    const errors: CheckpointError[] = [];
    const machine = createReactMachine({ modelClient: scriptedModel([{ content: "hi" }]) });
    const actor = createActor(machine, { input: { runId: "run-locked" } });
    const handle = checkpointAgent(actor, failing, { onError: (e) => errors.push(e) });
    actor.start();
    const final = await waitFor(actor, done);
    expect(final.output?.status).toBe("succeeded");
    expect(errors.map((e) => e.message)).toEqual([
      "checkpoint of run run-locked was not saved: database is locked",
      "checkpoint of run run-locked was not saved: database is locked",
    ]);
    await expect(handle.flush()).rejects.toThrow(CheckpointError);
    await expect(handle.flush()).resolves.toBeUndefined();

    await expect(runAgent(createReactMachine({ modelClient: scriptedModel([{ content: "hi" }]) }), {}, { checkpoints: failing })).rejects.toThrow(
      /was not saved: database is locked/,
    );
  });
});
