import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { createActor } from "xstate";
import { z } from "zod";
import { human } from "../../actors/messages.js";
import { MemoryCheckpointStore } from "../../machines/persistence/checkpoints/memory-store.js";
import { CheckpointError } from "../../machines/persistence/checkpoints/store.js";
import { persistAgent, restoreAgent, SnapshotError, type PersistedAgent } from "../../machines/persistence/persistence.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { scriptedModel } from "../../testing/scripted-model.js";
import { defineTool } from "../../tools/tool.js";
import { propertyRuns, watchProcess } from "./process-watch.js";

/*
 * Corrupt and foreign snapshots: a saved run damaged at a random place (a value replaced by any
 * JSON, a key removed, the text cut short) or not a snapshot at all. restoreAgent must refuse it
 * with a SnapshotError, or, when the damage is harmless, give a snapshot that restores into an
 * agent that behaves: it never crashes (actor error), and the saved record is never changed.
 */

const record = defineTool({ name: "record", description: "Write a note", parameters: z.object({ note: z.string() }), execute: ({ note }) => `recorded ${note}` });
const approval = () => ({ decision: "pending" as const, reason: "needs a person" });
const machine = () => createReactMachine({ modelClient: scriptedModel([{ content: "Recorded." }]), tools: [record], constraints: [approval] });

let parked: PersistedAgent;

beforeAll(async () => {
  const first = createReactMachine({
    modelClient: scriptedModel([{ toolCalls: [{ id: "call_1", name: "record", arguments: { note: "x" } }] }]),
    tools: [record],
    constraints: [approval],
  });
  const actor = createActor(first, { input: { messages: [human("record x")], runId: "run-fuzz" } });
  const requested = new Promise<void>((resolve) => actor.on("guard.approval.requested", () => resolve()));
  actor.start();
  await requested;
  parked = persistAgent(actor);
  actor.stop();
});

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Every path into a JSON value (the root excluded). */
function pathsOf(value: Json, prefix: (string | number)[] = []): (string | number)[][] {
  if (value === null || typeof value !== "object") return [];
  const entries: [string | number, Json][] = Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value);
  return entries.flatMap(([key, child]) => [[...prefix, key], ...pathsOf(child, [...prefix, key])]);
}

function mutate(root: Json, path: (string | number)[], change: { kind: "replace"; value: Json } | { kind: "delete" }): Json {
  const copy = structuredClone(root);
  let node = copy as Record<string | number, Json>;
  for (const key of path.slice(0, -1)) node = node[key] as Record<string | number, Json>;
  const last = path[path.length - 1]!;
  if (change.kind === "replace") node[last] = change.value;
  else if (Array.isArray(node)) node.splice(last as number, 1);
  else delete node[last];
  return copy;
}

const damage = fc.oneof(
  fc.record({ kind: fc.constant("replace" as const), at: fc.nat(), value: fc.jsonValue({ maxDepth: 2 }) as fc.Arbitrary<Json> }),
  fc.record({ kind: fc.constant("delete" as const), at: fc.nat() }),
  fc.record({ kind: fc.constant("truncate" as const), at: fc.nat() }),
  fc.record({ kind: fc.constant("foreign" as const), value: fc.anything() }),
);

describe("corrupt and foreign snapshots", () => {
  it("are refused with a SnapshotError, or restore into an agent that still behaves; the saved record never changes", async () => {
    const watch = watchProcess();
    const original = JSON.stringify(parked);
    const paths = pathsOf(parked as unknown as Json);
    const outcomes = { refused: 0, restored: 0 };
    await fc.assert(
      fc.asyncProperty(damage, async (d) => {
        let saved: unknown;
        const where = "at" in d && d.kind !== "truncate" ? paths[d.at % paths.length]!.join(".") : d.kind;
        if (d.kind === "truncate") saved = original.slice(0, d.at % original.length);
        else if (d.kind === "foreign") saved = d.value;
        else saved = mutate(parked as unknown as Json, paths[d.at % paths.length]!, d.kind === "replace" ? { kind: "replace", value: d.value } : { kind: "delete" });
        const frozen = JSON.stringify(saved) ?? String(saved);

        const target = machine();
        let snapshot;
        try {
          snapshot = restoreAgent(target, saved);
        } catch (error) {
          // A clear refusal: the typed error, saying what cannot be restored and what to do.
          expect(error).toBeInstanceOf(SnapshotError);
          expect((error as Error).message).toMatch(/^cannot restore /);
          outcomes.refused += 1;
          return;
        } finally {
          expect(JSON.stringify(saved) ?? String(saved)).toBe(frozen);
          expect(JSON.stringify(parked)).toBe(original);
        }
        outcomes.restored += 1;
        // Harmless damage (a changed text, a dropped optional field): the agent must restore and behave.
        const actor = createActor(target, { snapshot });
        const errors: unknown[] = [];
        actor.subscribe({ error: (error) => errors.push(error) });
        actor.start();
        actor.send({ type: "guard.approve", callId: "call_1" });
        for (let i = 0; i < 20 && actor.getSnapshot().status === "active"; i++) await new Promise((resolve) => setTimeout(resolve, 1));
        const status = actor.getSnapshot().status;
        actor.stop();
        expect(errors.map(String), `${d.kind} at ${where}`).toEqual([]);
        expect(["active", "done", "stopped"]).toContain(status);
        if (status === "done") expect(["succeeded", "failed"]).toContain((actor.getSnapshot().output as { status: string }).status);
      }),
      { numRuns: propertyRuns(300) },
    );
    await watch.stop();
    expect(watch.rejections).toEqual([]);
    console.info(`damaged snapshots: ${JSON.stringify(outcomes)}`);
    expect(outcomes.refused).toBeGreaterThan(0);
  });

  it("a store holding a damaged row refuses it on load and keeps the row as it was", () => {
    const store = new MemoryCheckpointStore();
    store.save(parked.runId, parked);
    const checkpoints = (store as unknown as { checkpoints: Map<number, { skeleton: string }> }).checkpoints;
    const [checkpoint] = [...checkpoints.values()];
    checkpoint!.skeleton = checkpoint!.skeleton.slice(0, 200);
    expect(() => store.load(parked.runId)).toThrow(CheckpointError);
    expect(() => store.load(parked.runId)).toThrow(/checkpoint \d+ of run .* is damaged: its skeleton is not JSON/);
    expect(store.list()).toMatchObject([{ runId: parked.runId, status: "awaitingApproval" }]);
  });
});
