import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "vitest";
import { createActor } from "xstate";
import { defineTool } from "../../tools/tool.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { restoreAgent } from "../../machines/persistence/persistence.js";
import type { RunLogStore } from "../../machines/persistence/log/log-store.js";
import type { RunStore } from "../../queue/run-store.js";
import { startWorker } from "../../queue/worker.js";
import { scriptedModel } from "../../testing/scripted-model.js";
import { makeAgents } from "../queue/fixture-agents.mjs";
import { startScriptServer } from "../queue/script-model.js";
import { CHECKPOINT_RUNS, QUEUE_RUNS, checkpointAgents } from "../fixtures/stores/scenarios.mjs";
import { jianmu } from "../queue/fixture-jianmu.js";

/**
 * What a store written by release 52ccd4e (test/fixtures/stores/) must still do after this build
 * opened and migrated it: read every run back exactly as that release did, and continue each one.
 */

export const FIXTURES = join(import.meta.dirname, "../fixtures/stores");
export const expected = JSON.parse(readFileSync(join(FIXTURES, "expected.json"), "utf8")) as {
  checkpoints: Record<string, unknown> & { list: unknown[]; journal: unknown };
  queue: Record<string, { status: string; pendingApprovals: unknown[]; checkpoint?: string; output?: unknown }> & { list: unknown[] };
  postgres: Record<string, { status: string; pendingApprovals: unknown[]; checkpoint?: string; output?: unknown }> & { list: unknown[] };
};

const waitDone = (actor: ReturnType<typeof createActor>) =>
  new Promise<{ output: unknown }>((resolve, reject) => {
    const sub = actor.subscribe({ complete: () => (sub.unsubscribe(), resolve(actor.getSnapshot() as { output: unknown })), error: reject });
  });

/** The checkpoint store's file: its three runs read back as before and each finishes. */
export async function checkMigratedCheckpoints(store: RunLogStore): Promise<void> {
  const old = expected.checkpoints;
  expect(await store.list()).toEqual(old.list);
  for (const { runId } of Object.values(CHECKPOINT_RUNS)) {
    expect(JSON.stringify(await store.load(runId))).toBe(old[runId]);
    expect(await store.history(runId)).toHaveLength(1);
  }
  expect(await store.lookup({ runId: CHECKPOINT_RUNS.midTool.runId, iteration: 0, callId: "call_rec" })).toEqual(old.journal);

  const effects: string[] = [];
  const continueRun = async (machineName: "Parked" | "Journaled" | "Finished", runId: string, responses: object[], approve?: string) => {
    const machine = checkpointAgents({ createReactMachine, defineTool, scriptedModel }, { journal: store, effects, script: {} })[machineName](responses);
    const actor = createActor(machine, { snapshot: restoreAgent(machine, await store.load(runId)) });
    const done = waitDone(actor);
    actor.start();
    if (approve) actor.send({ type: "guard.approve", callId: approve });
    return (await done).output as { status: string; finalAnswer: string; messages: { role: string; content: string | null }[] };
  };
  const parked = await continueRun("Parked", CHECKPOINT_RUNS.parked.runId, [{ content: "Recorded." }], "call_rec");
  expect(parked).toMatchObject({ status: "succeeded", finalAnswer: "Recorded." });
  // The call the old release began and never finished is not run again: the model hears its outcome is unknown.
  const midTool = await continueRun("Journaled", CHECKPOINT_RUNS.midTool.runId, [{ content: "I will check first." }]);
  expect(midTool.finalAnswer).toBe("I will check first.");
  expect(midTool.messages.find((m) => m.role === "tool")?.content).toMatch(/may or may not have taken effect. It was not run again/);
  const finished = await continueRun("Finished", CHECKPOINT_RUNS.finished.runId, []);
  expect(finished).toMatchObject({ status: "succeeded", finalAnswer: "Recorded." });
  expect(effects).toEqual(["parked"]);
}

/** The run queue's store: statuses, checkpoints and the stored output as before; a new worker approves, claims and finishes the rest. */
export async function checkMigratedQueue(store: RunStore, old: typeof expected.queue): Promise<void> {
  for (const { runId } of Object.values(QUEUE_RUNS)) {
    expect(await store.status(runId)).toMatchObject({ status: old[runId]!.status, pendingApprovals: old[runId]!.pendingApprovals });
    expect(JSON.stringify(await store.load(runId))).toBe(old[runId]!.checkpoint);
  }
  expect(await store.list({})).toEqual(old.list);
  expect(await store.wait(QUEUE_RUNS.finished.runId)).toEqual(old[QUEUE_RUNS.finished.runId]!.output);

  const server = await startScriptServer();
  const effects = new Map<string, number>();
  const agents = makeAgents(jianmu, { baseURL: server.baseURL, journal: store, effect: (note: string) => void effects.set(note, (effects.get(note) ?? 0) + 1) });
  const worker = await startWorker({ store, agents, pollMs: 50, leaseMs: 5_000 });
  try {
    expect(await store.send(QUEUE_RUNS.parked.runId, { type: "guard.approve", callId: "call_0" })).toBe(true);
    expect(await store.wait(QUEUE_RUNS.parked.runId)).toMatchObject({ status: "succeeded", finalAnswer: QUEUE_RUNS.parked.script.answer });
    expect(await store.wait(QUEUE_RUNS.queued.runId)).toMatchObject({ status: "succeeded", finalAnswer: QUEUE_RUNS.queued.script.answer });
    expect(Object.fromEntries(effects)).toEqual({ "q-parked:pay": 1, "q-queued:1": 1, "q-queued:2": 1 });
    expect((await store.history(QUEUE_RUNS.parked.runId)).length).toBeGreaterThan(1);
  } finally {
    await worker.stop({ timeoutMs: 2_000 });
    await server.close();
  }
}
