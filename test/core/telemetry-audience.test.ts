import { afterEach, describe, expect, it } from "vitest";
import { createActor, toPromise, type InspectionEvent } from "xstate";
import { human } from "../../actors/messages.js";
import { heard, markUnheard } from "../../machines/chart/audience.js";
import type { AgentEmitted } from "../../machines/contract/events.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { runAgent } from "../../machines/runner.js";
import { MemoryCheckpointStore } from "../../machines/persistence/checkpoints/memory-store.js";
import { callTurn, loopback, textTurn, type Loopback } from "../output/helpers.js";
import { add } from "./helpers.js";

/*
 * Telemetry is built only when someone can hear it (machines/chart/audience.ts). `runAgent` marks the
 * actor it keeps to itself when it attaches no listener and no inspector; the chart's per-round
 * telemetry actions then build no event for it. Everything else, the run's course, its context and
 * its output, is the same; an actor made by `createActor` anywhere else is never marked.
 */

const opened: Loopback[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((l) => l.server.close()));
});

/** Two rounds: one tool call, then the answer, from the loopback server over the `openai` SDK. */
async function agent() {
  const server = await loopback([callTurn([{ id: "c1", name: "add", arguments: { a: 2, b: 3 } }]), textTurn(["the sum ", "is 5"])]);
  opened.push(server);
  return createReactMachine({ modelClient: server.client, tools: [add] });
}

const emitActions = (events: InspectionEvent[]) => events.filter((e) => e.type === "@xstate.action" && e.action.type === "xstate.emit").length;

describe("telemetry is built only when someone can hear it", () => {
  it("an actor starts heard, and a marked one is not", () => {
    const machine = createReactMachine({ modelClient: { description: "unused", complete: () => Promise.reject(new Error("unused")) } });
    const actor = createActor(machine, { input: { messages: [human("hi")] } });
    expect(heard(actor)).toBe(true);
    markUnheard(actor);
    expect(heard(actor)).toBe(false);
  });

  it("a marked actor runs the same course, context and output, with only its final event built", async () => {
    const runs = [];
    for (const mark of [false, true]) {
      const machine = await agent();
      const actor = createActor(machine, { input: { messages: [human("add 2 and 3")], runId: "r" } });
      if (mark) markUnheard(actor);
      const events: AgentEmitted[] = [];
      actor.on("*", (event) => events.push(event as AgentEmitted));
      const values: string[] = [];
      // The states passed through (how many snapshots a streamed reply makes depends on how its deltas were batched in time).
      actor.subscribe((snapshot) => {
        const value = JSON.stringify(snapshot.value);
        if (values.at(-1) !== value) values.push(value);
      });
      actor.start();
      const output = await toPromise(actor);
      runs.push({ events: events.map((e) => e.type), values, output: { ...output, messages: output.messages.length } });
    }
    const [listened, unheard] = runs;
    expect(listened!.events).toEqual(expect.arrayContaining(["reply.started", "model.call.started", "model.call.completed", "reply.completed", "tool.call.started", "tool.call.completed", "text.delta", "loop.terminated"]));
    // The per-round telemetry is not built; the run's end (once per run) still is.
    expect(unheard!.events).toEqual(["loop.terminated"]);
    expect(unheard!.values).toEqual(listened!.values);
    expect(unheard!.output).toEqual(listened!.output);
    expect(unheard!.output.finalAnswer).toBe("the sum is 5");
  });

  it("runAgent keeps every event for a listener, and every emit action for an inspector", async () => {
    const received: string[] = [];
    await runAgent(await agent(), { messages: [human("add 2 and 3")] }, { onEvent: (event) => received.push(event.type) });
    expect(received).toContain("tool.call.completed");
    expect(received).toContain("text.delta");

    const inspected: InspectionEvent[] = [];
    await runAgent(await agent(), { messages: [human("add 2 and 3")] }, { inspect: (event) => inspected.push(event) });
    // reply.started, model.call.started/completed, reply.completed per round, the tool's two, the text, the end.
    expect(emitActions(inspected)).toBeGreaterThanOrEqual(12);
  });

  it("runAgent with no listener (checkpoints only) finishes with its output and saves its checkpoint", async () => {
    const store = new MemoryCheckpointStore();
    const output = await runAgent(await agent(), { messages: [human("add 2 and 3")], runId: "quiet" }, { checkpoints: store });
    expect(output.status).toBe("succeeded");
    expect(output.finalAnswer).toBe("the sum is 5");
    expect(output.messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant"]);
    const saved = await store.load("quiet");
    expect(saved).toBeDefined();
  });
});
