import type { Actor } from "xstate";
import type { AgentOutput } from "../../machines/contract/context.js";
import type { AgentEmitted } from "../../machines/contract/events.js";
import type { ReactMachine } from "../../machines/react-machine.js";
import type { RunEvent } from "../protocol.js";
import { fieldsOf, outputView, positionOf, runSnapshotOf, type SnapshotLike } from "./run-view.js";

export interface RunEventsOptions {
  agent: string;
  machine: ReactMachine;
  /** Restored from a checkpoint: its past was told already, only what happens from here is new. */
  restored: boolean;
  append: (event: RunEvent) => void;
  /** The run ended here: finished, failed inside the machine, or stopped (parked). */
  onEnd?: () => void;
}

/**
 * Turn an agent actor's telemetry and snapshots into the protocol's events, as they happen: the one
 * translation both a run held by the handler (LiveRun) and a run on a queue worker (store-events.ts) use.
 * Subscribe before the actor starts.
 */
export function translateRunEvents(actor: Actor<ReactMachine>, options: RunEventsOptions): void {
  const { agent, machine, restored, append } = options;
  const first = actor.getSnapshot() as unknown as SnapshotLike;
  let lastPath = restored ? positionOf(first).path : "";
  let sentMessages = restored ? fieldsOf(machine, first).messages.length : 0;
  let lastUsage = restored ? fieldsOf(machine, first).usage.totalTokens : 0;
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    options.onEnd?.();
  };
  // Telemetry of the macrostep under way, told with the snapshot it led to (see tellStep).
  const step: RunEvent[] = [];
  const tell = (count: number) => {
    for (const event of step.splice(0, count)) append(event);
  };
  actor.on("*", (event) => {
    const translated = translate(event as AgentEmitted);
    if (translated && !ended) step.push(translated);
  });
  /**
   * One macrostep, told in causal order. XState hands over a macrostep's emitted events before its
   * snapshot, though the step may have finished things (a call's result is a new message, a decision
   * leads to a new state) and then begun the next (a reply, a call, a question asked in the new
   * state). So the step's events are told in their order, and the messages, usage and state change
   * the step made go in after the last event that ended something, before what began after it.
   */
  const tellStep = (snapshot: SnapshotLike) => {
    tell(step.findLastIndex((event) => !BEGINNINGS.has(event.type)) + 1);
    const fields = fieldsOf(machine, snapshot);
    for (; sentMessages < fields.messages.length; sentMessages++) append({ type: "message", data: { index: sentMessages, message: fields.messages[sentMessages]! } });
    if (fields.usage.totalTokens !== lastUsage) {
      lastUsage = fields.usage.totalTokens;
      append({ type: "usage", data: { usage: fields.usage } });
    }
    const position = positionOf(snapshot);
    if (position.path !== lastPath) {
      lastPath = position.path;
      append({ type: "state.changed", data: { ...position, status: runSnapshotOf(agent, machine, snapshot).status } });
    }
    tell(step.length);
  };
  actor.subscribe({
    next: (value) => {
      if (!ended) tellStep(value as unknown as SnapshotLike);
    },
    error: (error) => {
      if (!ended) append({ type: "run.error", data: { message: error instanceof Error ? error.message : String(error) } });
      end();
    },
    complete: () => {
      if (!ended) tell(step.length);
      // A stopped actor completes too: the run is parked (in the store), not finished.
      if (actor.getSnapshot().status === "done" && !ended) append({ type: "run.finished", data: { output: outputView(actor.getSnapshot().output as AgentOutput) } });
      end();
    },
  });
  if (!restored) append({ type: "run.started", data: { runId: (first.context as { loop: { runId: string } }).loop.runId, agent } });
}

/**
 * Telemetry that begins something in the state a macrostep ends in (the rest reports what ended on the
 * way there). `approval.requested` is not one: the guard's verdict that a person must decide is what
 * leads the run into its waiting state, so it is told before that state (the chat protocols end a
 * message when the run waits, and must have every question by then).
 */
const BEGINNINGS: ReadonlySet<RunEvent["type"]> = new Set(["reply.started", "tool.call.started"]);

/** The agent's telemetry a page shows; the rest (model attempts, timings) stays on the server. */
function translate(event: AgentEmitted): RunEvent | undefined {
  switch (event.type) {
    case "reply.started":
      return { type: "reply.started", data: { round: event.round } };
    case "text.delta":
      return { type: "text.delta", data: { delta: event.delta } };
    case "reasoning.delta":
      return { type: "reasoning.delta", data: { delta: event.delta } };
    case "tool.call.started":
      return { type: "tool.call.started", data: { callId: event.callId, name: event.name, arguments: event.arguments } };
    case "tool.call.completed":
      return { type: "tool.call.completed", data: { callId: event.callId, name: event.name, output: event.output, durationMs: event.durationMs } };
    case "tool.call.failed":
      return { type: "tool.call.failed", data: { callId: event.callId, name: event.name, error: event.error, errorKind: event.errorKind } };
    case "tool.call.denied":
      return { type: "tool.call.denied", data: { callId: event.callId, name: event.name, reason: event.reason } };
    case "guard.approval.requested":
      return {
        type: "approval.requested",
        data: {
          callId: event.callId,
          name: event.name,
          arguments: event.arguments,
          ...(event.reason !== undefined ? { reason: event.reason } : {}),
          ...(event.deadline !== undefined ? { deadline: event.deadline } : {}),
        },
      };
    case "guard.approval.refused":
      return { type: "approval.refused", data: { callId: event.callId, reason: event.reason } };
    case "guard.approval.decided":
      return {
        type: "approval.decided",
        data: { callId: event.callId, name: event.name, decision: event.decision, edited: event.edited, ...(event.reason !== undefined ? { reason: event.reason } : {}) },
      };
    default:
      return undefined;
  }
}
