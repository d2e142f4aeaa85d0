import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { createInspector, type StatelyInspectionEvent } from "@statelyai/inspect";
import { describe, expect, test } from "vitest";
import { createActor } from "xstate";
import { human } from "../../actors/messages.js";
import { replayRecording, type ReplayedEvent } from "../../visualize/replay.js";
import { recordActor } from "../../visualize/recorder.js";
import { readRecording } from "../../visualize/recording-reader.js";
import { approvalMachine, recordApprovalRun } from "./approval-run.js";

const OUT = join("test-output", "visualize", "replay");
mkdirSync(OUT, { recursive: true });

/** What two inspector event streams must agree on (timestamps and ids differ by nature). */
function shape(event: StatelyInspectionEvent): string {
  switch (event.type) {
    case "@xstate.actor":
      return `actor ${event.sessionId} ${event.name} parent=${event.parentId ?? "-"}`;
    case "@xstate.event":
      return `event ${event.sessionId} ${event.event.type} from=${event.sourceId ?? "-"}`;
    case "@xstate.snapshot": {
      const snapshot = event.snapshot as { status?: string; value?: unknown };
      return `snapshot ${event.sessionId} ${snapshot.status} ${JSON.stringify(snapshot.value ?? null)} after=${event.event.type}`;
    }
  }
}

describe("replayRecording", () => {
  const path = join(OUT, "run.jsonl");
  // A real @statelyai/inspect inspector watches the run live, with an adapter that keeps what it is sent.
  const live: StatelyInspectionEvent[] = [];
  const liveInspector = createInspector({ send: (event) => void live.push(event) });
  const run = recordApprovalRun(path, { inspect: (event) => liveInspector.inspect.next?.(event) }).then(async (result) => {
    // The inspector converts events on 0 ms timers; this timer is queued after all of them.
    await new Promise((resolve) => setTimeout(resolve, 0));
    return result;
  });

  test("gives an inspector adapter the same sequence of events the live inspector got", async () => {
    await run;
    const replayed: StatelyInspectionEvent[] = [];
    const summary = await replayRecording(path, { send: (event) => void replayed.push(event) });
    expect(live.length).toBeGreaterThan(60); // the whole three-round run, not a prefix of it
    expect(replayed.map(shape)).toEqual(live.map(shape));
    expect(summary).toEqual({ events: live.length, machineId: "ReActAgent" });
  });

  test("rebuilds whole contexts from the recorded diffs and hands the root its machine definition", async () => {
    const { output } = await run;
    const replayed: StatelyInspectionEvent[] = [];
    await replayRecording(path, { send: (event) => void replayed.push(event) });
    const rootActor = replayed.find((e) => e.type === "@xstate.actor" && e.parentId === undefined);
    expect(rootActor?.type === "@xstate.actor" && JSON.parse(rootActor.definition ?? "{}")).toMatchObject({ id: "ReActAgent", initial: "Initialising" });
    const last = [...replayed].reverse().find((e) => e.type === "@xstate.snapshot" && e.sessionId === rootActor?.sessionId);
    const snapshot = last?.type === "@xstate.snapshot" ? (last.snapshot as { value?: unknown; context?: { state: { messages: unknown[] }; loop: { iteration: number } } }) : undefined;
    expect(snapshot?.value).toBe("Succeeded");
    expect(snapshot?.context?.state.messages).toEqual(output.messages);
    expect(snapshot?.context?.loop.iteration).toBe(output.iterations);
  });

  test("gives an observer the microsteps and actions too, in the recorded order", async () => {
    const { live: inspection } = await run;
    const seen: ReplayedEvent[] = [];
    await replayRecording(path, { next: (event) => seen.push(event) });
    expect(seen.map((e) => e.type)).toEqual(inspection.map((e) => e.type));
    const eventless = seen.flatMap((e) => (e.type === "@xstate.microstep" ? e.transitions.filter((t) => t.event === "").map((t) => t.source) : []));
    expect(eventless).toContain("ReActAgent.Evaluating.CheckAbort");
    expect(eventless).toContain("ReActAgent.Evaluating.ChildRunning.StateCondition");
    expect(eventless).toContain("ReActAgent.CheckBudget");
  });
});

describe("recordActor", () => {
  test("records an actor created elsewhere, final snapshot included, and closes by itself", async () => {
    const path = join(OUT, "actor.jsonl");
    const actor = createActor(approvalMachine(), { input: { messages: [human("What is (2 + 3) * 4? Save the result as a note.")] } });
    const recorder = recordActor(actor, { path });
    actor.on("guard.approval.requested", (event) => actor.send({ type: "guard.approve", callId: event.callId }));
    actor.start();
    const summary = await new Promise<Awaited<ReturnType<typeof recorder.close>>>((resolve) => {
      actor.subscribe({ complete: () => setTimeout(() => void recorder.close().then(resolve), 5) });
    });
    expect(summary.lines).toBeGreaterThan(50);
    const { lines } = await readRecording(path);
    let final: unknown;
    let actors = 0;
    for await (const line of lines) {
      if (line.k === "snapshot" && line.value !== undefined) final = { status: line.status, value: line.value };
      if (line.k === "actor") actors += 1;
    }
    expect(final).toEqual({ status: "done", value: "Succeeded" });
    // Root, the step host (the 3 model calls and 2 batches run in it), tool providers, 2 preflights, 1 approval timer.
    expect(actors).toBe(6);
  });
});
