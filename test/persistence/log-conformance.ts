import { randomBytes } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { createActor } from "xstate";
import { human, type Message } from "../../actors/messages.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { restoreAgent, type PersistedAgent } from "../../machines/persistence/persistence.js";
import { forkRun } from "../../machines/persistence/log/fork.js";
import { loadCheckpoint } from "../../machines/persistence/checkpoints/load-checkpoint.js";
import type { RunLogStore } from "../../machines/persistence/log/log-store.js";
import { loadThread, ThreadBusyError } from "../../machines/persistence/log/threads.js";
import { runAgent } from "../../machines/runner.js";
import { scriptedModel, type ScriptedResponse } from "../../testing/scripted-model.js";
import { approvalFor, awaitingApproval, countingTool, waitFor } from "./helpers.js";

/** A store of the run log, opened fresh (a new file, schema or object) each time; closed by the suite. */
export type OpenLogStore = (options?: { keepCheckpoints?: number; keepFinishedMs?: number }) => Promise<RunLogStore & { close?: () => unknown }>;

const call = (id: string, note: string) => ({ toolCalls: [{ id, name: "record", arguments: { note } }] });

/** A store wrapper that remembers the JSON text of every record it was given, in order. */
function remembering(store: RunLogStore) {
  const saved: { runId: string; text: string }[] = [];
  const wrapped = Object.create(store) as RunLogStore;
  wrapped.save = (runId: string, record: PersistedAgent) => {
    saved.push({ runId, text: JSON.stringify(record) });
    return store.save(runId, record);
  };
  return { wrapped, saved };
}

function agent(
  store: RunLogStore,
  responses: ScriptedResponse[],
  options: { approval?: boolean; context?: { maxTokens: number; strategy: "trim"; keepLast: number }; maxIterations?: number } = {},
) {
  const { tool, runs } = countingTool();
  const model = scriptedModel(responses);
  const machine = createReactMachine({
    modelClient: model,
    tools: [tool],
    journal: store,
    configFile: false,
    ...(options.approval ? { constraints: [approvalFor("record")] } : {}),
    config: { ...(options.context ? { context: options.context } : {}), ...(options.maxIterations ? { maxIterations: options.maxIterations } : {}) },
  });
  return { machine, model, runs };
}

const lastUser = (messages: readonly Message[]) => messages.filter((m) => m.role === "user").at(-1)?.content;

/**
 * History, forks and threads: the same answers from every backend of the run log (memory, SQLite,
 * PostgreSQL; the checkpoint stores and the run queue stores alike).
 */
export function describeRunLogConformance(name: string, open: OpenLogStore): void {
  describe(`run log conformance: ${name}`, () => {
    const opened: { close?: () => unknown }[] = [];
    const fresh: OpenLogStore = async (options) => {
      const store = await open(options);
      opened.push(store);
      return store;
    };
    afterEach(async () => {
      for (const store of opened.splice(0)) await store.close?.();
    });

    it("keeps every checkpoint: history lists them oldest first, each loads byte for byte as saved, a run restarts from any", async () => {
      const store = await fresh();
      const { wrapped, saved } = remembering(store);
      const first = agent(store, [call("c1", "one"), call("c2", "two"), { content: "done" }]);
      const output = await runAgent(first.machine, { runId: "hist", messages: [human("record twice")] }, { checkpoints: wrapped });
      expect(output.finalAnswer).toBe("done");
      const history = await store.history("hist");
      expect(history.map((h) => h.state)).toEqual(saved.map((s) => (JSON.parse(s.text) as PersistedAgent).state));
      expect(history.map((h) => h.iteration)).toEqual(saved.map((s) => (JSON.parse(s.text) as PersistedAgent).iteration));
      expect(history.map((h) => h.at)).toEqual(saved.map((s) => (JSON.parse(s.text) as PersistedAgent).savedAt));
      expect(new Set(history.map((h) => h.checkpointId)).size).toBe(history.length);
      expect(history[0]!.parentId).toBeUndefined();
      for (let i = 1; i < history.length; i++) expect(history[i]!.parentId).toBe(history[i - 1]!.checkpointId);
      for (const [i, entry] of history.entries()) expect(JSON.stringify(await store.load("hist", entry.checkpointId))).toBe(saved[i]!.text);
      expect(JSON.stringify(await store.load("hist"))).toBe(saved.at(-1)!.text);
      expect(await store.load("hist", "999999")).toBeUndefined();
      expect(await store.history("no-such-run")).toEqual([]);

      // Back to the checkpoint before the second model call: the journal answers the call the run already made.
      const second = history.findIndex((h, i) => i > 0 && h.state.endsWith("AgentLLM"));
      const again = agent(store, [call("c2", "two"), { content: "done again" }]);
      const resumed = await runAgent(again.machine, {}, { snapshot: restoreAgent(again.machine, await store.load("hist", history[second]!.checkpointId)), checkpoints: store });
      expect(resumed.finalAnswer).toBe("done again");
      expect(again.runs).toEqual([]);
      expect((await store.history("hist")).length).toBeGreaterThan(history.length);
    });

    it("a save late in a long run stores what is new since the save before (the new messages plus at most 2 KB), as early ones do", async () => {
      const store = await fresh();
      const rounds = 60;
      const growth: { stored: number; newMessages: number }[] = [];
      let before = { stored: 0, messages: 0 };
      const wrapped = Object.create(store) as RunLogStore;
      wrapped.save = async (runId: string, record: PersistedAgent) => {
        await store.save(runId, record);
        const usage = await store.usage(runId);
        const stored = usage.checkpointBytes + usage.itemChars;
        const messages = (record.snapshot as unknown as { context: { state: { messages: Message[] } } }).context.state.messages;
        growth.push({ stored: stored - before.stored, newMessages: messages.slice(before.messages).reduce((n, m) => n + JSON.stringify(m).length, 0) });
        before = { stored, messages: messages.length };
      };
      const responses = [...Array.from({ length: rounds }, (_, i) => call(`c${i}`, `finding ${i} `.repeat(30))), { content: "done" }];
      const { machine } = agent(store, responses, { maxIterations: rounds + 1 });
      expect((await runAgent(machine, { runId: "long", messages: [human("record many")] }, { checkpoints: wrapped })).finalAnswer).toBe("done");
      expect(growth.length).toBeGreaterThan(2 * rounds);
      // A round is two saves (before the model call, after the tools). The memory backends write nothing
      // and keep skeletons uncompressed: flat, but their bound is the durable stores' to meet.
      if (!name.startsWith("Memory")) {
        const perRound = growth.slice(1).flatMap((g, i, all) => (i % 2 === 0 && all[i + 1] ? [{ round: i / 2 + 1, over: g.stored + all[i + 1]!.stored - g.newMessages - all[i + 1]!.newMessages }] : []));
        expect(perRound.filter((r) => r.over > 2048)).toEqual([]);
      }
      // Flat: the last ten saves cost what ten early ones did, though the conversation is six times longer.
      const sum = (part: typeof growth) => part.reduce((n, g) => n + g.stored, 0);
      expect(sum(growth.slice(-10))).toBeLessThanOrEqual(sum(growth.slice(10, 20)) * 1.25);
    });

    it("prunes old checkpoints when told to keep only the last few (and those still needed to read them)", async () => {
      const store = await fresh({ keepCheckpoints: 2 });
      const { wrapped, saved } = remembering(store);
      const { machine } = agent(store, [call("c1", "one"), call("c2", "two"), call("c3", "three"), { content: "done" }]);
      await runAgent(machine, { runId: "pruned", messages: [human("go")] }, { checkpoints: wrapped });
      const history = await store.history("pruned");
      // The last two always; a store that compresses against keyframes keeps the two they need.
      expect(history.length).toBeLessThanOrEqual(4);
      expect(saved.length).toBeGreaterThan(6);
      expect(history.slice(-2).map((h) => h.state)).toEqual(saved.slice(-2).map((s) => (JSON.parse(s.text) as PersistedAgent).state));
      expect((await store.load("pruned"))?.status).toBe("succeeded");
      for (const entry of history) expect(await store.load("pruned", entry.checkpointId)).toBeDefined();
    });

    it("forks from a checkpoint with the last user message replaced: shares the stored conversation, leaves the original alone", async () => {
      const store = await fresh();
      const original = agent(store, [call("c1", "one"), { content: "first answer" }]);
      await runAgent(original.machine, { runId: "orig", messages: [human("context ".repeat(60)), human("question A")] }, { checkpoints: store });
      const before = JSON.stringify(await store.load("orig"));
      const firstModelCall = (await store.history("orig")).find((h) => h.state.endsWith("AgentLLM"))!;
      const source = (await store.load("orig", firstModelCall.checkpointId))!;
      const messages = [...(source.snapshot.context as { state: { messages: Message[] } }).state.messages];
      messages[messages.length - 1] = human("question B");
      const itemsBefore = (await store.usage()).items;
      const forkId = await forkRun(store, "orig", { from: firstModelCall.checkpointId, runId: "orig-b", messages });
      expect(forkId).toBe("orig-b");
      // Only the replaced message was stored: the rest is the original's.
      expect((await store.usage()).items - itemsBefore).toBe(1);
      const forkHistory = await store.history("orig-b");
      expect(forkHistory).toEqual([expect.objectContaining({ runId: "orig-b", parentId: firstModelCall.checkpointId, state: firstModelCall.state })]);
      const forked = agent(store, [{ content: "answer to B" }]);
      const output = await runAgent(forked.machine, {}, { snapshot: restoreAgent(forked.machine, await store.load("orig-b")), checkpoints: store });
      expect(output).toMatchObject({ runId: "orig-b", finalAnswer: "answer to B" });
      expect(lastUser(forked.model.requests[0]!.messages)).toBe("question B");
      expect(JSON.stringify(await store.load("orig"))).toBe(before);
      // The original keeps its own id; a fork with the same id, or from no checkpoint, is refused by name.
      await expect(forkRun(store, "orig", { from: firstModelCall.checkpointId, runId: "orig-b" })).rejects.toThrow(/orig-b already exists/);
      await expect(forkRun(store, "orig", { from: "424242" })).rejects.toThrow(/has no checkpoint 424242/);
      await expect(forkRun(store, "orig", { from: firstModelCall.checkpointId, messages: [{ role: "user" }] as never })).rejects.toThrow(/options\.messages/);
    });

    it("a fork inherits the journal before its fork point: a call the original completed is never run again, a new call runs", async () => {
      const store = await fresh();
      const original = agent(store, [call("call_0", "paid"), { content: "paid once" }]);
      await runAgent(original.machine, { runId: "pay", messages: [human("pay")] }, { checkpoints: store });
      expect(original.runs).toEqual(["paid"]);
      const history = await store.history("pay");
      const executing = history.find((h) => h.state.endsWith("Executing"))!;
      const modelCall = history.find((h) => h.state.endsWith("AgentLLM"))!;

      // From the checkpoint taken while the call was running: the fork replays the journaled outcome.
      const fromBatch = await forkRun(store, "pay", { from: executing.checkpointId });
      const replay = agent(store, [{ content: "already paid" }]);
      const replayed = await runAgent(replay.machine, {}, { snapshot: restoreAgent(replay.machine, await store.load(fromBatch)), checkpoints: store });
      expect(replayed.finalAnswer).toBe("already paid");
      expect(replay.runs).toEqual([]);
      expect(JSON.stringify(replayed.messages)).toContain("recorded paid");

      // From before the model answered: the fork's call (same id) is its own, and runs.
      const fromModel = await forkRun(store, "pay", { from: modelCall.checkpointId });
      const rerun = agent(store, [call("call_0", "paid again"), { content: "paid in the fork" }]);
      await runAgent(rerun.machine, {}, { snapshot: restoreAgent(rerun.machine, await store.load(fromModel)), checkpoints: store });
      expect(rerun.runs).toEqual(["paid again"]);

      // The branches: the original first, then its forks in the order made, each with its fork point.
      const late = await forkRun(store, "pay", { from: executing.checkpointId, runId: "pay-late" });
      expect(await store.lineage(fromModel)).toEqual([
        { runId: "pay" },
        { runId: fromBatch, forkedFrom: { runId: "pay", checkpointId: executing.checkpointId } },
        { runId: fromModel, forkedFrom: { runId: "pay", checkpointId: modelCall.checkpointId } },
        { runId: "pay-late", forkedFrom: { runId: "pay", checkpointId: executing.checkpointId } },
      ]);
      expect(await store.lineage("no-such-run")).toEqual([]);

      // The original deleted: a fork of it still answers from what it inherited.
      expect(await store.delete("pay")).toBe(true);
      expect(await store.lineage(late)).toEqual([{ runId: "pay-late" }]);
      const orphan = agent(store, [{ content: "still paid once" }]);
      const finished = await runAgent(orphan.machine, {}, { snapshot: restoreAgent(orphan.machine, await store.load(late)), checkpoints: store });
      expect(finished.finalAnswer).toBe("still paid once");
      expect(orphan.runs).toEqual([]);
      expect(await store.load(fromBatch)).toBeDefined();
    });

    it("threads: each run continues the thread's conversation, never two at once, and compaction applies to it", async () => {
      const store = await fresh();
      const first = agent(store, [{ content: "hello to you" }]);
      const one = await runAgent(first.machine, { threadId: "chat-1", messages: [human("hello")] }, { checkpoints: store });
      const second = agent(store, [{ content: "still here" }]);
      const two = await runAgent(second.machine, { threadId: "chat-1", messages: [human("are you there?")] }, { checkpoints: store });
      expect(second.model.requests[0]!.messages.map((m) => m.content)).toEqual(expect.arrayContaining(["hello", "hello to you", "are you there?"]));
      const thread = await loadThread(store, "chat-1");
      expect(thread).toEqual({ threadId: "chat-1", messages: two.messages, runs: [one.runId, two.runId] });
      expect(thread.messages.map((m) => m.content)).toEqual(["hello", "hello to you", "are you there?", "still here"]);
      // The second run stored only what it added to the thread.
      expect((await store.usage(two.runId)).items).toBeLessThanOrEqual(4);
      expect(await loadThread(store, "no-such-thread")).toEqual({ threadId: "no-such-thread", messages: [], runs: [] });

      // A run waiting for approval keeps the thread: the next one is refused, by name, until it ends.
      const parked = agent(store, [call("c1", "x"), { content: "recorded" }], { approval: true });
      const actorInput = { threadId: "chat-2", runId: "parked-run", messages: [human("record x")] };
      const pending = runAgent(parked.machine, actorInput, { checkpoints: store, onApproval: () => new Promise((resolve) => setTimeout(() => resolve({ approve: true }), 300)) });
      await new Promise((resolve) => setTimeout(resolve, 100));
      const refused = agent(store, [{ content: "never" }]);
      await expect(runAgent(refused.machine, { threadId: "chat-2", messages: [human("next")] }, { checkpoints: store })).rejects.toThrow(ThreadBusyError);
      await expect(runAgent(refused.machine, { threadId: "chat-2", messages: [human("next")] }, { checkpoints: store })).rejects.toThrow(/thread chat-2 is busy: its run parked-run/);
      await pending;
      const after = agent(store, [{ content: "now it is my turn" }]);
      expect((await runAgent(after.machine, { threadId: "chat-2", messages: [human("next")] }, { checkpoints: store })).finalAnswer).toBe("now it is my turn");
      expect((await loadThread(store, "chat-2")).runs).toHaveLength(2);

      // A thread long enough to pass the context limit is compacted like any conversation.
      const long = agent(store, [{ content: "noted" }], { context: { maxTokens: 120, strategy: "trim", keepLast: 2 } });
      const compacted = await runAgent(long.machine, { threadId: "chat-1", messages: [human("one more, " + "with many words ".repeat(40))] }, { checkpoints: store });
      expect(compacted.messages.length).toBeLessThan(thread.messages.length + 2);
      expect((await loadThread(store, "chat-1")).messages).toEqual(compacted.messages);
    });

    it("keepFinishedMs: pruneFinished deletes runs finished longer ago, at most `limit` a sweep; never a parked or recent run, one with a fork, or a thread's latest ended run", async () => {
      const store = await fresh({ keepFinishedMs: 1_500 });
      const finish = (input: Parameters<typeof runAgent>[1], answer = "done") => runAgent(agent(store, [{ content: answer }]).machine, input, { checkpoints: store });
      await finish({ runId: "old-1", messages: [human("a")] });
      await finish({ runId: "old-2", messages: [human("b")] });
      await finish({ runId: "t-1", threadId: "kept-thread", messages: [human("first")] });
      const latest = await finish({ runId: "t-2", threadId: "kept-thread", messages: [human("second")] }, "second answer");
      await finish({ runId: "forked-from", messages: [human("c")] });
      await forkRun(store, "forked-from", { from: (await store.history("forked-from"))[0]!.checkpointId, runId: "the-fork" });
      let approve!: (decision: { approve: true }) => void;
      const gate = new Promise<{ approve: true }>((resolve) => (approve = resolve));
      const parked = agent(store, [call("c1", "x"), { content: "recorded" }], { approval: true });
      const pending = runAgent(parked.machine, { runId: "parked", messages: [human("record x")] }, { checkpoints: store, onApproval: () => gate });
      while ((await store.load("parked"))?.status !== "awaitingApproval") await new Promise((resolve) => setTimeout(resolve, 10));
      // Past the retention for the runs above; "recent" stays well inside it however slow the machine.
      await new Promise((resolve) => setTimeout(resolve, 1_600));
      await finish({ runId: "recent", messages: [human("d")] });
      expect((await store.usage("old-1")).checkpoints).toBeGreaterThan(0);

      expect(await store.pruneFinished(1)).toBe(1);
      expect(await store.pruneFinished()).toBe(2);
      expect(await store.pruneFinished()).toBe(0);
      for (const runId of ["old-1", "old-2", "t-1"]) {
        expect(await store.load(runId)).toBeUndefined();
        expect(await store.history(runId)).toEqual([]);
        expect(await store.usage(runId)).toMatchObject({ checkpoints: 0, journalEntries: 0 });
      }
      for (const runId of ["t-2", "forked-from", "the-fork", "parked", "recent"]) expect(await store.load(runId)).toBeDefined();

      // The thread goes on from its latest ended run, and the parked run finishes.
      expect((await loadThread(store, "kept-thread")).messages).toEqual(latest.messages);
      const next = agent(store, [{ content: "third" }]);
      await runAgent(next.machine, { threadId: "kept-thread", messages: [human("third?")] }, { checkpoints: store });
      expect(JSON.stringify(next.model.requests[0]!.messages)).toContain("second answer");
      approve({ approve: true });
      expect((await pending).finalAnswer).toBe("recorded");
      expect(parked.runs).toHaveLength(1);

      // Without the option nothing is ever pruned.
      const keeping = await fresh();
      await runAgent(agent(keeping, [{ content: "done" }]).machine, { runId: "kept", messages: [human("a")] }, { checkpoints: keeping });
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(await keeping.pruneFinished()).toBe(0);
      expect(keeping.keepFinishedMs).toBeUndefined();
      expect(await keeping.load("kept")).toBeDefined();
    });

    it("a large image kept once per run goes with a fork and with a thread's next run", async () => {
      const store = await fresh();
      const photo = { type: "image" as const, data: randomBytes(6_000).toString("base64"), mediaType: "image/png" };
      const question: Message = { role: "user", content: [{ type: "text", text: "What is on it?" }, photo] };
      const first = agent(store, [{ content: "A cat." }]);
      await runAgent(first.machine, { runId: "photo", threadId: "pics", messages: [question] }, { checkpoints: store });
      const saved = await store.load("photo");
      // Kept apart: the checkpoint names it, the store holds its bytes once.
      expect(JSON.stringify(saved)).not.toContain(photo.data);
      expect(JSON.stringify(await loadCheckpoint(store, "photo"))).toContain(photo.data);
      const forkId = await forkRun(store, "photo", { from: (await store.history("photo"))[0]!.checkpointId });
      const forked = agent(store, [{ content: "Still a cat." }]);
      await runAgent(forked.machine, {}, { snapshot: restoreAgent(forked.machine, await loadCheckpoint(store, forkId)), checkpoints: store });
      expect(JSON.stringify(forked.model.requests[0]!.messages)).toContain(photo.data);
      const next = agent(store, [{ content: "Yes, that one." }]);
      await runAgent(next.machine, { threadId: "pics", messages: [human("The same picture?")] }, { checkpoints: store });
      expect(JSON.stringify(next.model.requests[0]!.messages)).toContain(photo.data);
      expect(JSON.stringify((await loadThread(store, "pics")).messages)).toContain(photo.data);
    });

    it("refuses a thread without a store that keeps threads, and a bad thread id, by name", async () => {
      const store = await fresh();
      const { machine } = agent(store, [{ content: "x" }]);
      await expect(runAgent(machine, { threadId: "t", messages: [human("hi")] })).rejects.toThrow(/input\.threadId: a thread lives in a store/);
      await expect(runAgent(machine, { threadId: "has space", messages: [human("hi")] }, { checkpoints: store })).rejects.toThrow(/input\.threadId: may only hold/);
      // Refused input leaves the thread free.
      await expect(runAgent(machine, { threadId: "t2", messages: "hi" } as never, { checkpoints: store })).rejects.toThrow(/messages/);
      const ok = agent(store, [{ content: "fine" }]);
      expect((await runAgent(ok.machine, { threadId: "t2", messages: [human("hi")] }, { checkpoints: store })).finalAnswer).toBe("fine");
    });
  });
}

/** An actor parked for approval, saved: what the killed-process and migration tests start from. */
export async function parkedActor(store: RunLogStore) {
  const { machine } = agent(store, [call("c1", "x")], { approval: true });
  const actor = createActor(machine, { input: { messages: [human("record x")] } });
  actor.start();
  await waitFor(actor, awaitingApproval);
  return actor;
}
