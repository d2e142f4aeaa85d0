import { describe, expect, it } from "vitest";
import { createActor } from "xstate";
import { z } from "zod";
import { human, type ToolMessage } from "../../actors/messages.js";
import type { ToolOutcome } from "../../actors/tool-executor.js";
import { MemoryToolJournal, type JournalEntry, type JournalKey, type ToolJournal } from "../../actors/tool-journal.js";
import { checkpointAgent } from "../../machines/persistence/checkpoints/checkpoint-agent.js";
import { MemoryCheckpointStore } from "../../machines/persistence/checkpoints/memory-store.js";
import type { AgentEmitted } from "../../machines/contract/events.js";
import { createReactMachine, MachineOptionsError } from "../../machines/react-machine.js";
import { restoreAgent } from "../../machines/persistence/persistence.js";
import { runAgent } from "../../machines/runner.js";
import { scriptedModel } from "../../testing/scripted-model.js";
import { defineTool } from "../../tools/tool.js";
import { collect, countingTool, done, waitFor } from "./helpers.js";

const callRecord = { toolCalls: [{ id: "c1", name: "record", arguments: { note: "pay invoice 7" } }] };
const key: JournalKey = { runId: "run-crash", iteration: 0, callId: "c1" };

/**
 * Play the first process up to a crash inside the tool: the run is checkpointed in Executing,
 * the journal says the call started, and then the process "dies" (the actor is stopped while the
 * tool is still working, so nothing after that point happens).
 */
async function crashInsideTool(store: MemoryCheckpointStore) {
  let entered!: () => void;
  const inside = new Promise<void>((resolve) => (entered = resolve));
  const hanging = defineTool({
    name: "record",
    description: "Write a note",
    parameters: z.object({ note: z.string() }),
    execute: () => {
      entered();
      return new Promise(() => undefined);
    },
  });
  const machine = createReactMachine({ modelClient: scriptedModel([callRecord]), tools: [hanging], journal: store });
  const actor = createActor(machine, { input: { messages: [human("pay invoice 7")], runId: key.runId } });
  checkpointAgent(actor, store);
  actor.start();
  await inside;
  actor.stop();
  const saved = store.load(key.runId)!;
  expect(saved.state).toBe("Evaluating.ChildRunning.ToolExecutor.Executing");
  expect(store.lookup(key)).toEqual({ state: "started", name: "record" });
  return saved;
}

/** The second process: a new machine with the given tool resumes from the store's checkpoint. */
async function resume(store: MemoryCheckpointStore, tool = countingTool().tool) {
  const model = scriptedModel([{ content: "All done." }]);
  const machine = createReactMachine({ modelClient: model, tools: [tool], journal: store });
  const actor = createActor(machine, { snapshot: restoreAgent(machine, store.load(key.runId)) });
  const events = collect(actor);
  actor.start();
  const final = await waitFor(actor, done);
  const observation = final.output!.messages.find((m): m is ToolMessage => m.role === "tool")!;
  expect(model.remaining).toBe(0);
  // What the model read in round 2 is the observation the run ended with.
  expect(model.requests[0]!.messages.at(-1)).toMatchObject({ role: "tool", content: observation.content });
  return { final, observation, events };
}

describe("the tool journal keeps tools at most once across restarts", () => {
  it("a call whose outcome is journaled is not run again: the journaled outcome is reused", async () => {
    const store = new MemoryCheckpointStore();
    await crashInsideTool(store);
    // As if the first process had got as far as journaling the completion before dying.
    const journaled: ToolOutcome = { callId: "c1", name: "record", status: "ok", content: "paid: receipt 991", durationMs: 12, effectTags: ["payment"] };
    store.completed(key, journaled);

    const { tool, runs } = countingTool();
    const { final, observation, events } = await resume(store, tool);
    expect(runs).toEqual([]);
    expect(observation).toMatchObject({ toolCallId: "c1", content: "paid: receipt 991" });
    expect(observation.isError ?? false).toBe(false);
    expect(final.output?.toolEffects).toEqual(["payment"]);
    expect(events.filter((e) => e.type.startsWith("tool.call."))).toMatchObject([
      { type: "tool.call.started", callId: "c1" },
      { type: "tool.call.completed", callId: "c1", output: "paid: receipt 991", durationMs: 12 },
    ]);
  });

  it("a call that started and never completed is not re-run: the model gets an outcome-unknown observation", async () => {
    const store = new MemoryCheckpointStore();
    await crashInsideTool(store);

    const { tool, runs } = countingTool();
    const { observation, events } = await resume(store, tool);
    expect(runs).toEqual([]);
    expect(observation.isError).toBe(true);
    expect(observation.content).toMatch(/^Error: record was interrupted: .*may or may not have taken effect.*not declared idempotent/);
    expect(events.find((e) => e.type === "tool.call.failed")).toMatchObject({ callId: "c1", errorKind: "outcome_unknown" });
    // The verdict is journaled too: a second restart tells the model the same thing.
    expect(store.lookup(key)).toMatchObject({ state: "completed", outcome: { errorKind: "outcome_unknown" } });
  });

  it("an idempotent tool that was interrupted runs again", async () => {
    const store = new MemoryCheckpointStore();
    await crashInsideTool(store);

    const { tool, runs } = countingTool("record", { idempotent: true });
    expect(tool.idempotent).toBe(true);
    const { observation } = await resume(store, tool);
    expect(runs).toEqual(["pay invoice 7"]);
    expect(observation).toMatchObject({ content: "recorded pay invoice 7" });
    expect(observation.isError ?? false).toBe(false);
    expect(store.lookup(key)).toMatchObject({ state: "completed", outcome: { content: "recorded pay invoice 7" } });
  });

  it("writes the journal before the result reaches the machine", async () => {
    const log: string[] = [];
    const inner = new MemoryToolJournal();
    let actorRef: { getSnapshot(): { context: { state: Record<string, unknown> } } } | undefined;
    const toolMessagesInContext = () => (actorRef!.getSnapshot().context.state.messages as { role: string }[]).filter((m) => m.role === "tool").length;
    const journal: ToolJournal = {
      lookup: (k) => inner.lookup(k),
      started: (k, name) => {
        log.push(`journal.started ${k.callId}`);
        return inner.started(k, name);
      },
      completed: (k, outcome) => {
        log.push(`journal.completed ${k.callId} (tool messages in context: ${toolMessagesInContext()})`);
        inner.completed(k, outcome);
      },
      forget: (runId) => inner.forget(runId),
    };
    const tool = countingTool("record", {
      execute: (note) => {
        log.push(`execute ${note}`);
        return "ok";
      },
    }).tool;
    const machine = createReactMachine({ modelClient: scriptedModel([callRecord, { content: "done" }]), tools: [tool], journal });
    const actor = createActor(machine, { input: { messages: [human("go")] } });
    actorRef = actor;
    actor.on("tool.call.completed", () => log.push("event tool.call.completed"));
    actor.start();
    const final = await waitFor(actor, done);
    expect(final.output?.status).toBe("succeeded");
    expect(log).toEqual(["journal.started c1", "execute pay invoice 7", "journal.completed c1 (tool messages in context: 0)", "event tool.call.completed"]);
    expect(inner.size).toBe(1);
  });

  it("keys calls by iteration: the same call id in a later round is a new call", async () => {
    const journal = new MemoryToolJournal();
    const { tool, runs } = countingTool();
    const model = scriptedModel([
      { toolCalls: [{ id: "call_0", name: "record", arguments: { note: "first" } }] },
      { toolCalls: [{ id: "call_0", name: "record", arguments: { note: "second" } }] },
      { content: "done" },
    ]);
    const output = await runAgent(createReactMachine({ modelClient: model, tools: [tool], journal }), { messages: [human("go")] });
    expect(output.status).toBe("succeeded");
    expect(runs).toEqual(["first", "second"]);
    expect(journal.size).toBe(2);
  });

  it("does not run a call when the journal cannot record it, and says why", async () => {
    const broken: ToolJournal = {
      lookup: () => undefined,
      started: () => {
        throw new Error("disk full");
      },
      completed: () => undefined,
      forget: () => undefined,
    };
    const { tool, runs } = countingTool();
    const events: AgentEmitted[] = [];
    const output = await runAgent(
      createReactMachine({ modelClient: scriptedModel([callRecord, { content: "could not record" }]), tools: [tool], journal: broken }),
      { messages: [human("go")] },
      { onEvent: (e) => events.push(e) },
    );
    expect(output.status).toBe("succeeded");
    expect(runs).toEqual([]);
    const observation = output.messages.find((m): m is ToolMessage => m.role === "tool")!;
    // The journal's own error is infrastructure's business, not the model's: never quoted in the observation.
    expect(observation.content).toBe("Error: record was not run: the tool journal could not be written");
    expect(events.find((e) => e.type === "tool.call.failed")).toMatchObject({ errorKind: "journal_unavailable" });
  });

  /*
   * A queue worker that lost a run and claimed it again holds the new copy's fence under the same run
   * id: a write still coming from the stopped copy would pass for the new copy's. So a copy stopped
   * while the journal was answering writes nothing for the call: no claim, no "interrupted".
   */
  it.each([
    ["nothing", undefined],
    ["a started call", { state: "started", name: "record" } as const],
  ])("a copy stopped while the journal answers writes nothing for the call (the journal holds %s)", async (_, entry) => {
    let answer!: (entry: JournalEntry | undefined) => void;
    let asked!: () => void;
    const lookupAsked = new Promise<void>((resolve) => (asked = resolve));
    const writes: string[] = [];
    const slow: ToolJournal = {
      lookup: () => (asked(), new Promise((resolve) => (answer = resolve))),
      started: () => (writes.push("started"), true),
      completed: () => void writes.push("completed"),
      forget: () => undefined,
    };
    const { tool, runs } = countingTool();
    const machine = createReactMachine({ modelClient: scriptedModel([callRecord]), tools: [tool], journal: slow });
    const actor = createActor(machine, { input: { messages: [human("go")], runId: "run-stopped" } });
    actor.start();
    await lookupAsked;
    actor.stop();
    answer(entry);
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(writes).toEqual([]);
    expect(runs).toEqual([]);
  });

  it("refuses a journal option that is not a ToolJournal", () => {
    expect(() => createReactMachine({ modelClient: scriptedModel([]), journal: {} as ToolJournal })).toThrow(MachineOptionsError);
    expect(() => createReactMachine({ modelClient: scriptedModel([]), journal: {} as ToolJournal })).toThrow(/options\.journal must implement ToolJournal/);
  });
});
