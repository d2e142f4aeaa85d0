import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import Database from "better-sqlite3";
import { beforeAll, describe, expect, it } from "vitest";
import { createActor } from "xstate";
import { z } from "zod";
import { human } from "../../actors/messages.js";
import { MemoryCheckpointStore } from "../../machines/persistence/checkpoints/memory-store.js";
import { SqliteCheckpointStore } from "../../machines/persistence/checkpoints/sqlite-store.js";
import { persistAgent, readPersisted, restoreAgent, SnapshotError, type PersistedAgent } from "../../machines/persistence/persistence.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { scriptedModel } from "../../testing/scripted-model.js";
import { defineTool } from "../../tools/tool.js";

/*
 * Tampered or hostile checkpoints: nested absurdly deep, or holding huge strings. restoreAgent (and
 * every store's load) refuses them up front with a SnapshotError naming the limit, instead of
 * restoring something that overflows the stack later, in the middle of the run.
 */

const record = defineTool({ name: "record", description: "Write a note", parameters: z.object({ note: z.string() }), execute: ({ note }) => `recorded ${note}` });
const machine = () => createReactMachine({ modelClient: scriptedModel([{ content: "Recorded." }]), tools: [record], constraints: [() => ({ decision: "pending" })], configFile: false });

let parked: PersistedAgent;
beforeAll(async () => {
  const first = createReactMachine({ modelClient: scriptedModel([{ toolCalls: [{ id: "call_1", name: "record", arguments: { note: "x" } }] }]), tools: [record], constraints: [() => ({ decision: "pending" })], configFile: false });
  const actor = createActor(first, { input: { messages: [human("record x")], runId: "run-hostile" } });
  const requested = new Promise<void>((resolve) => actor.on("guard.approval.requested", () => resolve()));
  actor.start();
  await requested;
  parked = persistAgent(actor);
  actor.stop();
});

/** A value nested `depth` levels deep, built without recursion, as `kind`. */
function deep(depth: number, kind: "array" | "object"): unknown {
  let value: unknown = "bottom";
  for (let i = 0; i < depth; i++) value = kind === "array" ? [value] : { next: value };
  return value;
}

/** The parked run with `value` planted at a place in its host state (or elsewhere). */
function planted(value: unknown, where: "state" | "decision" | "child-input" | "envelope"): PersistedAgent {
  const copy = structuredClone(parked) as unknown as { snapshot: { context: { state: Record<string, unknown>; loop: { decisions: Record<string, unknown>[] } }; children: Record<string, { snapshot: Record<string, unknown> }> } } & Record<string, unknown>;
  if (where === "state") copy.snapshot.context.state["planted"] = value;
  if (where === "decision") copy.snapshot.context.loop.decisions[0]!["extra"] = value;
  if (where === "child-input") Object.values(copy.snapshot.children)[0]!.snapshot["input"] = value;
  if (where === "envelope") copy["extra"] = value;
  return copy as unknown as PersistedAgent;
}

/** JSON text of `record` with `inner` (itself JSON text) where the marker is: deep values built as text, never as objects. */
function textWith(inner: string): string {
  return JSON.stringify(planted("@@HERE@@", "state")).replace('"@@HERE@@"', inner);
}

describe("snapshots nested too deep", () => {
  const cases: [string, number, "array" | "object", "state" | "decision" | "child-input" | "envelope"][] = [
    ["100 000 arrays in the host state", 100_000, "array", "state"],
    ["100 000 objects in the host state", 100_000, "object", "state"],
    ["10 000 objects on a decision", 10_000, "object", "decision"],
    ["5 000 arrays in a child's input", 5_000, "array", "child-input"],
    ["1 000 objects beside the envelope", 1_000, "object", "envelope"],
  ];

  it.each(cases)("%s (as an object): refused by restoreAgent with a SnapshotError naming the depth limit", (_, depth, kind, where) => {
    const error = (() => {
      try {
        restoreAgent(machine(), planted(deep(depth, kind), where));
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(SnapshotError);
    expect((error as SnapshotError).problem).toBe("limits");
    expect((error as SnapshotError).message).toMatch(/cannot restore the run: the saved snapshot is refused because it is nested more than 500 levels deep/);
  });

  it.each([100_000, 20_000, 600])("%i levels as JSON text (as a store hands it back): refused, never a stack overflow", (depth) => {
    const text = textWith("[".repeat(depth) + "]".repeat(depth));
    expect(() => restoreAgent(machine(), text)).toThrow(/nested more than 500 levels deep/);
    expect(() => readPersisted(text)).toThrow(SnapshotError);
  });

  it("a store holding such a row refuses it on load, with the same limit named", () => {
    const path = join(mkdtempSync(join(tmpdir(), "jianmu-hostile-")), "runs.db");
    const writer = new SqliteCheckpointStore({ path });
    // A list in the host state long enough to be stored element by element.
    writer.save(parked.runId, planted(Array.from({ length: 40 }, (_, i) => `note ${i}`), "state"));
    writer.close();
    // One element rewritten directly, as a tampering process would.
    const raw = new Database(path);
    expect(raw.prepare("UPDATE jianmu_items SET body = ? WHERE seq = 0 AND body = '\"note 0\"'").run("[".repeat(50_000) + "]".repeat(50_000)).changes).toBe(1);
    raw.close();
    const store = new SqliteCheckpointStore({ path });
    expect(() => store.load("run-hostile")).toThrow(/nested more than 500 levels deep/);
    store.close();
    rmSync(dirname(path), { recursive: true, force: true });
  });

  it("nesting within the limit restores, and the run goes on", async () => {
    const saved = planted(deep(400, "object"), "state");
    const m = machine();
    const actor = createActor(m, { snapshot: restoreAgent(m, saved) });
    actor.start();
    actor.send({ type: "guard.approve", callId: "call_1" });
    await new Promise<void>((resolve) => actor.subscribe({ complete: resolve }));
    expect(actor.getSnapshot().output?.status).toBe("succeeded");
    // And it persists again without overflowing anything.
    expect(() => JSON.stringify(persistAgent(actor))).not.toThrow();
  });

  it("the limits can be raised by a caller who trusts the data", () => {
    expect(() => restoreAgent(machine(), planted(deep(800, "array"), "state"))).toThrow(SnapshotError);
    expect(() => restoreAgent(machine(), planted(deep(800, "array"), "state"), { maxDepth: 1_000, maxChars: 1_000_000 })).not.toThrow();
  });
});

describe("snapshots with huge strings", () => {
  const limits = { maxDepth: 500, maxChars: 1_000_000 };
  it.each([
    ["one huge string in the host state", () => planted("x".repeat(2_000_000), "state")],
    ["many large strings", () => planted(Array.from({ length: 50 }, () => "y".repeat(30_000)), "state")],
    ["a huge key", () => planted({ ["k".repeat(1_500_000)]: 1 }, "state")],
    ["a huge decision reason", () => planted("z".repeat(1_200_000), "decision")],
  ] as const)("%s: refused naming the size limit", (_, make) => {
    expect(() => restoreAgent(machine(), make(), limits)).toThrow(/it holds more than 1000000 characters of JSON/);
  });

  it("as text over the limit: refused before it is even parsed", () => {
    const text = JSON.stringify(planted("x".repeat(2_000_000), "state"));
    expect(() => restoreAgent(machine(), text, limits)).toThrow(/it is \d+ characters long, over the limit of 1000000/);
  });

  it("the default limit lets a long real conversation through", () => {
    const big = planted(Array.from({ length: 200 }, (_, i) => ({ role: "user", content: `${i} ${"w".repeat(20_000)}` })), "state");
    expect(() => restoreAgent(machine(), big)).not.toThrow();
    const store = new MemoryCheckpointStore();
    store.save("run-hostile", parked);
    expect(store.load("run-hostile")).toEqual(parked);
  });
});
