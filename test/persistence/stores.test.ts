import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createActor } from "xstate";
import { human } from "../../actors/messages.js";
import type { ToolOutcome } from "../../actors/tool-executor.js";
import type { ToolJournal } from "../../actors/tool-journal.js";
import { MemoryCheckpointStore } from "../../machines/persistence/checkpoints/memory-store.js";
import { SqliteCheckpointStore } from "../../machines/persistence/checkpoints/sqlite-store.js";
import { CheckpointError, type CheckpointStore } from "../../machines/persistence/checkpoints/store.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { persistAgent, type PersistedAgent } from "../../machines/persistence/persistence.js";
import { scriptedModel } from "../../testing/scripted-model.js";
import { approvalFor, awaitingApproval, countingTool, done, waitFor } from "./helpers.js";

const dir = mkdtempSync(join(tmpdir(), "jianmu-stores-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let parked: PersistedAgent;
let finished: PersistedAgent;

beforeAll(async () => {
  const machine = createReactMachine({
    modelClient: scriptedModel([{ toolCalls: [{ id: "c1", name: "record", arguments: { note: "n" } }] }]),
    tools: [countingTool().tool],
    constraints: [approvalFor("record")],
  });
  const actor = createActor(machine, { input: { messages: [human("go")], runId: "run-parked" } });
  actor.start();
  await waitFor(actor, awaitingApproval);
  parked = persistAgent(actor, () => 1_000);
  actor.stop();

  const other = createReactMachine({ name: "Summariser", modelClient: scriptedModel([{ content: "short" }]) });
  const summariser = createActor(other, { input: { messages: [human("summarise")], runId: "run-done" } });
  summariser.start();
  await waitFor(summariser, done);
  finished = persistAgent(summariser, () => 2_000);
});

const outcome: ToolOutcome = { callId: "c1", name: "record", status: "ok", content: "recorded n", durationMs: 3, effectTags: ["write"] };

const stores: [string, () => CheckpointStore & ToolJournal & { close?: () => void }][] = [
  ["MemoryCheckpointStore", () => new MemoryCheckpointStore()],
  ["SqliteCheckpointStore (file)", () => new SqliteCheckpointStore({ path: join(dir, `contract-${Math.random().toString(36).slice(2)}.db`) })],
  ["SqliteCheckpointStore (:memory:)", () => new SqliteCheckpointStore({ path: ":memory:" })],
];

describe.each(stores)("%s", (_name, make) => {
  it("saves, loads, lists (newest first) and deletes runs", async () => {
    const store = make();
    expect(await store.load("run-parked")).toBeUndefined();
    expect(await store.list()).toEqual([]);

    await store.save("run-parked", parked);
    await store.save("run-done", finished);
    expect(await store.load("run-parked")).toEqual(parked);
    expect(await store.list()).toEqual([
      { runId: "run-done", machine: "Summariser", state: "Succeeded", status: "succeeded", iteration: 0, savedAt: 2_000 },
      {
        runId: "run-parked",
        machine: "ReActAgent",
        state: "Evaluating.ChildRunning.ToolExecutor.AwaitingApproval",
        status: "awaitingApproval",
        iteration: 0,
        savedAt: 1_000,
      },
    ]);

    // A later save of the same run replaces it.
    const later = { ...parked, savedAt: 3_000 };
    await store.save("run-parked", later);
    expect((await store.load("run-parked"))?.savedAt).toBe(3_000);
    expect((await store.list()).map((s) => s.runId)).toEqual(["run-parked", "run-done"]);

    expect(await store.delete("run-parked")).toBe(true);
    expect(await store.delete("run-parked")).toBe(false);
    expect(await store.load("run-parked")).toBeUndefined();
    expect((await store.list()).map((s) => s.runId)).toEqual(["run-done"]);
    store.close?.();
  });

  it("refuses a record filed under another run id", () => {
    const store = make();
    expect(() => store.save("run-other", parked)).toThrow(CheckpointError);
    expect(() => store.save("run-other", parked)).toThrow(/belongs to run "run-parked", not "run-other"/);
    store.close?.();
  });

  it("journals calls: started, then completed with the outcome; keyed by run, iteration and call id", async () => {
    const store = make();
    const key = { runId: "r1", iteration: 0, callId: "c1" };
    expect(await store.lookup(key)).toBeUndefined();
    await store.started(key, "record");
    expect(await store.lookup(key)).toEqual({ state: "started", name: "record" });
    await store.completed(key, outcome);
    expect(await store.lookup(key)).toEqual({ state: "completed", outcome });
    // The same call id in another iteration or run is another call.
    expect(await store.lookup({ ...key, iteration: 1 })).toBeUndefined();
    expect(await store.lookup({ ...key, runId: "r2" })).toBeUndefined();
    store.close?.();
  });

  it("deleting a run forgets its journal too", async () => {
    const store = make();
    await store.save("run-parked", parked);
    await store.completed({ runId: "run-parked", iteration: 0, callId: "c1" }, outcome);
    await store.completed({ runId: "run-done", iteration: 0, callId: "c1" }, outcome);
    await store.delete("run-parked");
    expect(await store.lookup({ runId: "run-parked", iteration: 0, callId: "c1" })).toBeUndefined();
    expect(await store.lookup({ runId: "run-done", iteration: 0, callId: "c1" })).toEqual({ state: "completed", outcome });
    store.close?.();
  });
});

describe("SqliteCheckpointStore", () => {
  it("keeps checkpoints and journal in one WAL-mode file that another connection (process) reads", () => {
    const path = join(dir, "nested", "dirs", "runs.db");
    const writer = new SqliteCheckpointStore({ path });
    writer.save("run-parked", parked);
    writer.completed({ runId: "run-parked", iteration: 0, callId: "c1" }, outcome);

    const reader = new SqliteCheckpointStore({ path });
    expect(reader.load("run-parked")).toEqual(parked);
    expect(reader.lookup({ runId: "run-parked", iteration: 0, callId: "c1" })).toEqual({ state: "completed", outcome });
    writer.close();
    reader.close();
    reader.close(); // idempotent

    const raw = new Database(path, { readonly: true });
    expect(raw.pragma("journal_mode", { simple: true })).toBe("wal");
    const tables = raw.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'jianmu_%' ORDER BY name").all();
    expect(tables.map((t) => (t as { name: string }).name)).toEqual([
      "jianmu_agents", "jianmu_blobs", "jianmu_checkpoints", "jianmu_events", "jianmu_inbox", "jianmu_items", "jianmu_journal", "jianmu_queue_meta", "jianmu_runs", "jianmu_streams",
    ]);
    // The run's row points at its checkpoint; the checkpoint's arrays are elements of streams, one row each.
    const run = raw.prepare("SELECT head, state, status FROM jianmu_runs WHERE run_id = 'run-parked'").get() as { head: number; state: string; status: string };
    expect(run).toMatchObject({ state: parked.state, status: "awaitingApproval" });
    const messages = (parked.snapshot.context as { state: { messages: unknown[] } }).state.messages;
    const items = raw.prepare("SELECT body FROM jianmu_items").all().map((r) => (r as { body: string }).body);
    for (const message of messages) expect(items.filter((text) => text === JSON.stringify(message)).length).toBeLessThanOrEqual(1);
    raw.close();
  });

  it("reports a lost element as such: a gap in a stream, or a stream shorter than its checkpoint says", () => {
    const path = join(dir, "lost-element.db");
    // A conversation long enough to be stored element by element.
    const long = structuredClone(parked);
    (long.snapshot as { context: { state: { messages: unknown[] } } }).context.state.messages = Array.from({ length: 5 }, (_, i) => human(`note ${i} `.repeat(20)));
    const store = new SqliteCheckpointStore({ path });
    store.save("run-parked", long);
    store.close();
    const raw = new Database(path);
    const longest = raw.prepare("SELECT stream_id AS id, max(seq) AS last FROM jianmu_items GROUP BY stream_id ORDER BY count(*) DESC LIMIT 1").get() as { id: number; last: number };
    expect(longest.last).toBeGreaterThanOrEqual(2);
    // What a store opened afresh (nothing cached) says when loading, after the element at `seq` is lost.
    const loadWithout = (seq: number): unknown => {
      raw.prepare("DELETE FROM jianmu_items WHERE stream_id = ? AND seq = ?").run(longest.id, seq);
      const fresh = new SqliteCheckpointStore({ path });
      try {
        return fresh.load("run-parked");
      } catch (error) {
        return error;
      } finally {
        fresh.close();
      }
    };
    const short = loadWithout(longest.last);
    expect(short).toBeInstanceOf(CheckpointError);
    expect((short as Error).message).toMatch(new RegExp(`run-parked in .*lost-element\\.db is damaged: stream ${longest.id} holds ${longest.last} elements, the checkpoint needs ${longest.last + 1}`));
    const gap = loadWithout(1);
    expect(gap).toBeInstanceOf(CheckpointError);
    expect((gap as Error).message).toMatch(new RegExp(`is damaged: stream ${longest.id} has a gap before element 2`));
    raw.close();
  });

  it("reports a damaged row as such instead of restoring garbage", () => {
    const path = join(dir, "damaged.db");
    const store = new SqliteCheckpointStore({ path });
    store.save("run-parked", parked);
    store.completed({ runId: "run-parked", iteration: 0, callId: "c1" }, outcome);
    const raw = new Database(path);
    raw.prepare("UPDATE jianmu_checkpoints SET body = substr(body, 1, 10)").run();
    raw.prepare("UPDATE jianmu_journal SET outcome = '{\"status\":\"ok\"}'").run();
    raw.close();
    const fresh = new SqliteCheckpointStore({ path });
    expect(() => fresh.load("run-parked")).toThrow(CheckpointError);
    expect(() => fresh.load("run-parked")).toThrow(/checkpoint \d+ of run run-parked in .*damaged\.db is damaged/);
    fresh.close();
    expect(() => store.lookup({ runId: "run-parked", iteration: 0, callId: "c1" })).toThrow(/outcome of call c1 \(iteration 0\) is damaged/);
    store.close();
  });

  it("refuses a database written by a newer layout, and bad options, by name", () => {
    const path = join(dir, "newer.db");
    const raw = new Database(path);
    raw.pragma("user_version = 9");
    raw.close();
    expect(() => new SqliteCheckpointStore({ path })).toThrow(/written by a newer jianmu \(database layout 9, this one knows 3\)/);
    expect(() => new SqliteCheckpointStore({ path: "" })).toThrow(/options\.path must name the database file/);
    expect(() => new SqliteCheckpointStore({ path: join(dir, "x.db"), busyTimeoutMs: -1 })).toThrow(/options\.busyTimeoutMs/);
    expect(() => new SqliteCheckpointStore({ path: join(dir, "y.db"), extra: 1 } as never)).toThrow(/options/);
  });
});
