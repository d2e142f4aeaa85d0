import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createActor } from "xstate";
import { z } from "zod";
import { human, type ToolMessage } from "../../actors/messages.js";
import type { ToolJournal } from "../../actors/tool-journal.js";
import { MemoryCheckpointStore } from "../../machines/persistence/checkpoints/memory-store.js";
import { SqliteCheckpointStore } from "../../machines/persistence/checkpoints/sqlite-store.js";
import type { AgentEmitted } from "../../machines/contract/events.js";
import { persistAgent, restoreAgent } from "../../machines/persistence/persistence.js";
import { createReactMachine, toolProvidersClosed } from "../../machines/react-machine.js";
import { runAgent } from "../../machines/runner.js";
import { scriptedModel } from "../../testing/scripted-model.js";
import type { ToolProvider } from "../../tools/provider.js";
import { defineTool, type Tool } from "../../tools/tool.js";
import { approvalFor, awaitingApproval, done, waitFor } from "../persistence/helpers.js";

/*
 * At most once when copies of one run race, and the provider lifecycle under restores and cancels:
 * two actors continuing the same parked run, approved at the same moment, run the tool once; two live
 * actors of one run never take each other's tools; approvals sent while a restored run's providers
 * start are held, not refused; a cancel while a provider starts ends the run at once.
 */

const work = mkdtempSync(join(tmpdir(), "jianmu-races-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const askToRecord = { toolCalls: [{ id: "call_rec", name: "record", arguments: { note: "hello" } }] };

/** A tool whose every run is counted, and that takes a while (so the copies really overlap). */
function slowRecorder(runs: string[]): Tool {
  return defineTool({
    name: "record",
    description: "Write a note somewhere durable",
    parameters: z.object({ note: z.string() }),
    execute: async ({ note }) => {
      runs.push(note);
      await new Promise((resolve) => setTimeout(resolve, 10));
      return `recorded ${note}`;
    },
  });
}

async function parkedRun(journal: ToolJournal): Promise<string> {
  const machine = createReactMachine({ modelClient: scriptedModel([askToRecord]), tools: [slowRecorder([])], constraints: [approvalFor("record")], journal, configFile: false });
  const actor = createActor(machine, { input: { messages: [human("record hello")], runId: "run-raced" } });
  actor.start();
  await waitFor(actor, awaitingApproval);
  const saved = JSON.stringify(persistAgent(actor));
  actor.stop();
  return saved;
}

/** Restore `saved` in `copies` actors sharing `journals` (one each, or one for all), approve them all in one tick. */
async function race(saved: string, journals: ToolJournal[], copies: number) {
  const runs: string[] = [];
  const tool = slowRecorder(runs);
  const actors = Array.from({ length: copies }, (_, i) => {
    const machine = createReactMachine({
      modelClient: scriptedModel([{ content: "done" }]),
      tools: [tool],
      constraints: [approvalFor("record")],
      journal: journals[i % journals.length]!,
      configFile: false,
    });
    const actor = createActor(machine, { snapshot: restoreAgent(machine, saved) });
    const events: AgentEmitted[] = [];
    actor.on("*", (e) => events.push(e as AgentEmitted));
    actor.start();
    return { actor, events };
  });
  for (const { actor } of actors) actor.send({ type: "guard.approve", callId: "call_rec" });
  const finals = await Promise.all(actors.map(({ actor }) => waitFor(actor, done)));
  return { runs, finals, events: actors.map((a) => a.events) };
}

describe("the same parked run restored twice and approved at the same moment", () => {
  it.each([2, 3, 5])("memory journal, %i copies: the tool runs once, the others report already_claimed", async (copies) => {
    const store = new MemoryCheckpointStore();
    const saved = await parkedRun(store);
    const { runs, finals, events } = await race(saved, [store], copies);
    expect(runs).toEqual(["hello"]);
    expect(finals.every((f) => f.output?.status === "succeeded")).toBe(true);
    const observations = finals.map((f) => f.output!.messages.find((m): m is ToolMessage => m.role === "tool")!);
    expect(observations.filter((o) => o.content === "recorded hello")).toHaveLength(1);
    const losers = observations.filter((o) => o.content !== "recorded hello");
    expect(losers).toHaveLength(copies - 1);
    for (const loser of losers) expect(loser.content).toMatch(/another copy of this run claimed this call first/);
    expect(events.flat().filter((e) => e.type === "tool.call.failed").every((e) => (e as { errorKind: string }).errorKind === "already_claimed")).toBe(true);
  });

  it("SQLite, one connection per copy on one file: the tool runs once", async () => {
    const path = join(work, "race.db");
    const stores = [new SqliteCheckpointStore({ path }), new SqliteCheckpointStore({ path }), new SqliteCheckpointStore({ path })];
    try {
      const saved = await parkedRun(stores[0]!);
      const { runs, events } = await race(saved, stores, 3);
      expect(runs).toEqual(["hello"]);
      const kinds = events.flat().filter((e) => e.type === "tool.call.failed").map((e) => (e as { errorKind: string }).errorKind);
      expect(kinds).toEqual(["already_claimed", "already_claimed"]);
      // The winner's outcome is what the journal holds.
      expect(stores[1]!.lookup({ runId: "run-raced", iteration: 0, callId: "call_rec" })).toMatchObject({ state: "completed", outcome: { content: "recorded hello" } });
    } finally {
      for (const store of stores) store.close();
    }
  });

  it("a copy restored after the winner finished reuses its outcome and does not run the tool", async () => {
    const store = new MemoryCheckpointStore();
    const saved = await parkedRun(store);
    const first = await race(saved, [store], 1);
    const second = await race(saved, [store], 1);
    expect(first.runs).toEqual(["hello"]);
    expect(second.runs).toEqual([]);
    expect(second.finals[0]!.output!.messages.find((m) => m.role === "tool")).toMatchObject({ content: "recorded hello" });
  });

  it("the claim itself: started() is true once per key, for memory and SQLite alike", () => {
    const sqlite = new SqliteCheckpointStore({ path: ":memory:" });
    for (const journal of [new MemoryCheckpointStore(), sqlite] as ToolJournal[]) {
      const key = { runId: "r", iteration: 1, callId: "c" };
      expect(journal.started(key, "t")).toBe(true);
      expect(journal.started(key, "t")).toBe(false);
      expect(journal.started({ ...key, iteration: 2 }, "t")).toBe(true);
      journal.completed(key, { callId: "c", name: "t", status: "ok", content: "x", effectTags: [] });
      // Never overwrites: a completed call cannot be claimed back to `started`.
      expect(journal.started(key, "t")).toBe(false);
      expect(journal.lookup(key)).toMatchObject({ state: "completed" });
      // The first recorded outcome wins: a losing copy's "unknown" never replaces the real one.
      journal.completed(key, { callId: "c", name: "t", status: "error", errorKind: "outcome_unknown", content: "Error: unknown", effectTags: [] });
      expect(journal.lookup(key)).toMatchObject({ state: "completed", outcome: { status: "ok", content: "x" } });
    }
    sqlite.close();
  });
});

/** A provider whose start waits for `gate` (when given), recording what happens to it. */
function gatedProvider(log: string[], runs: string[], gate?: Promise<void>, label = "p"): ToolProvider<unknown> {
  return {
    name: "notes",
    initialize: async () => {
      log.push(`${label}.initialize`);
      if (gate) await gate;
    },
    getTools: () => [slowRecorder(runs)],
    close: () => {
      log.push(`${label}.close`);
    },
  };
}

describe("two live actors of one machine with the same run id", () => {
  it("stopping one never takes the other's tools away", async () => {
    const log: string[] = [];
    const runs: string[] = [];
    const machine = createReactMachine({
      modelClient: scriptedModel([askToRecord, askToRecord, { content: "done" }]),
      toolProviders: [gatedProvider(log, runs)],
      constraints: [approvalFor("record")],
      configFile: false,
    });
    const first = createActor(machine, { input: { messages: [human("go")], runId: "run-twin" } });
    const second = createActor(machine, { input: { messages: [human("go")], runId: "run-twin" } });
    first.start();
    second.start();
    await Promise.all([waitFor(first, awaitingApproval), waitFor(second, awaitingApproval)]);
    second.stop();
    first.send({ type: "guard.approve", callId: "call_rec", args: { note: "edited" } });
    const final = await waitFor(first, done);
    expect(final.output?.status).toBe("succeeded");
    expect(final.output?.messages.find((m) => m.role === "tool")).toMatchObject({ content: "recorded edited" });
    expect(runs).toEqual(["edited"]);
    await toolProvidersClosed(machine, "run-twin");
    expect(log.filter((l) => l.endsWith(".close"))).toHaveLength(2);
  });
});

describe("approvals sent while a restored run's providers are still starting", () => {
  async function parkWithProvider() {
    const runs: string[] = [];
    const machine = createReactMachine({ modelClient: scriptedModel([askToRecord]), toolProviders: [gatedProvider([], runs)], constraints: [approvalFor("record")], configFile: false });
    const actor = createActor(machine, { input: { messages: [human("go")], runId: "run-held" } });
    actor.start();
    await waitFor(actor, awaitingApproval);
    const saved = JSON.stringify(persistAgent(actor));
    actor.stop();
    return saved;
  }

  function restoredMachine(gate: Promise<void>, runs: string[], log: string[] = []) {
    return createReactMachine({
      modelClient: scriptedModel([{ content: "done" }]),
      toolProviders: [gatedProvider(log, runs, gate)],
      constraints: [approvalFor("record")],
      configFile: false,
    });
  }

  it.each([
    ["edited as an object", { args: { note: "edited" } }, "recorded edited"],
    ["edited as JSON text", { args: '{"note":"as text"}' }, "recorded as text"],
    ["not edited", {}, "recorded hello"],
  ] as const)("%s: held, then applied once the tools are ready", async (_, extra, expected) => {
    const saved = await parkWithProvider();
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const runs: string[] = [];
    const machine = restoredMachine(gate, runs);
    const actor = createActor(machine, { snapshot: restoreAgent(machine, saved) });
    const events: AgentEmitted[] = [];
    actor.on("*", (e) => events.push(e as AgentEmitted));
    actor.start();
    actor.send({ type: "guard.approve", callId: "call_rec", ...extra });
    expect(events.filter((e) => e.type === "guard.approval.refused")).toEqual([]);
    open();
    const final = await waitFor(actor, done);
    expect(final.output?.status).toBe("succeeded");
    expect(final.output?.messages.find((m) => m.role === "tool")).toMatchObject({ content: expected });
    expect(events.filter((e) => e.type === "guard.approval.refused")).toEqual([]);
  });

  it("a bad edit held while starting is still refused by the tool's schema once the tools are ready, and a later decision applies", async () => {
    const saved = await parkWithProvider();
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const runs: string[] = [];
    const machine = restoredMachine(gate, runs);
    const actor = createActor(machine, { snapshot: restoreAgent(machine, saved) });
    const refused: string[] = [];
    actor.on("guard.approval.refused", (e) => refused.push(e.reason));
    actor.start();
    actor.send({ type: "guard.approve", callId: "call_rec", args: { note: 7 } });
    actor.send({ type: "guard.reject", callId: "call_rec", reason: "changed my mind" });
    open();
    const final = await waitFor(actor, done);
    expect(refused).toHaveLength(1);
    expect(refused[0]).toMatch(/the edited arguments do not fit record/);
    expect(final.output?.messages.find((m) => m.role === "tool")).toMatchObject({ content: "Call rejected: changed my mind" });
    expect(runs).toEqual([]);
  });

  it("runAgent({ snapshot, onApproval }) on such a run finishes, edited or not", async () => {
    for (const answer of [{ approve: true as const, args: { note: "via runAgent" } }, { approve: true as const }]) {
      const saved = await parkWithProvider();
      const runs: string[] = [];
      const gate = new Promise<void>((resolve) => setTimeout(resolve, 20));
      const machine = restoredMachine(gate, runs);
      const output = await runAgent(machine, {}, { snapshot: restoreAgent(machine, saved), onApproval: () => answer });
      expect(output.status).toBe("succeeded");
      expect(runs).toEqual(["args" in answer ? "via runAgent" : "hello"]);
    }
  });
});

describe("cancelling while a provider's initialize() runs", () => {
  function hangingProvider(log: string[], signals: (AbortSignal | undefined)[]): ToolProvider<unknown> {
    return {
      name: "stuck",
      initialize: (_context, signal) => {
        log.push("initialize");
        signals.push(signal);
        // Never settles, whatever happens.
        return new Promise<void>(() => undefined);
      },
      getTools: () => [],
      close: () => {
        log.push("close");
      },
    };
  }

  it("by the run's AbortSignal: runAgent resolves cancelled, initialize got an aborted signal, close() was called", async () => {
    const log: string[] = [];
    const signals: (AbortSignal | undefined)[] = [];
    const machine = createReactMachine({ modelClient: scriptedModel([]), toolProviders: [hangingProvider(log, signals)], configFile: false });
    const controller = new AbortController();
    const running = runAgent(machine, { messages: [human("go")] }, { signal: controller.signal });
    await new Promise((resolve) => setImmediate(resolve));
    expect(log).toEqual(["initialize"]);
    controller.abort();
    const output = await running;
    expect(output.termination).toMatchObject({ reason: "cancelled" });
    expect(signals[0]?.aborted).toBe(true);
    expect(log).toEqual(["initialize", "close"]);
  });

  it("by agent.cancel: the run ends at once and the providers close", async () => {
    const log: string[] = [];
    const signals: (AbortSignal | undefined)[] = [];
    const machine = createReactMachine({ modelClient: scriptedModel([]), toolProviders: [hangingProvider(log, signals), gatedProvider(log, [], undefined, "second")], configFile: false });
    const actor = createActor(machine, { input: { messages: [human("go")], runId: "run-cancel-start" } });
    actor.start();
    await new Promise((resolve) => setImmediate(resolve));
    actor.send({ type: "agent.cancel", reason: "enough" });
    expect(actor.getSnapshot().status).toBe("done");
    expect(actor.getSnapshot().output?.termination).toMatchObject({ reason: "cancelled", detail: "enough" });
    await toolProvidersClosed(machine, "run-cancel-start");
    expect(signals[0]?.aborted).toBe(true);
    // The second provider never started, so only the first is closed.
    expect(log).toEqual(["initialize", "close"]);
  });

  it("a restored run cancelled while its providers restart resolves too", async () => {
    const runs: string[] = [];
    const parkMachine = createReactMachine({ modelClient: scriptedModel([askToRecord]), toolProviders: [gatedProvider([], runs)], constraints: [approvalFor("record")], configFile: false });
    const parkedActor = createActor(parkMachine, { input: { messages: [human("go")] } });
    parkedActor.start();
    await waitFor(parkedActor, awaitingApproval);
    const saved = JSON.stringify(persistAgent(parkedActor));
    parkedActor.stop();

    const log: string[] = [];
    const signals: (AbortSignal | undefined)[] = [];
    const machine = createReactMachine({ modelClient: scriptedModel([]), toolProviders: [hangingProvider(log, signals)], constraints: [approvalFor("record")], configFile: false });
    const controller = new AbortController();
    const running = runAgent(machine, {}, { snapshot: restoreAgent(machine, saved), signal: controller.signal, onApproval: () => ({ approve: true, args: { note: "x" } }) });
    await new Promise((resolve) => setImmediate(resolve));
    controller.abort();
    const output = await running;
    expect(output.termination).toMatchObject({ reason: "cancelled" });
    expect(log).toEqual(["initialize", "close"]);
    expect(runs).toEqual([]);
  });
});
