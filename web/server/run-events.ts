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
  actor.on("*", (event) => {
    const translated = translate(event as AgentEmitted);
    if (translated && !ended) append(translated);
  });
  actor.subscribe({
    next: (value) => {
      if (ended) return;
      const snapshot = value as unknown as SnapshotLike;
      const position = positionOf(snapshot);
      if (position.path !== lastPath) {
        lastPath = position.path;
        append({ type: "state.changed", data: { ...position, status: runSnapshotOf(agent, machine, snapshot).status } });
      }
      const fields = fieldsOf(machine, snapshot);
      for (; sentMessages < fields.messages.length; sentMessages++) append({ type: "message", data: { index: sentMessages, message: fields.messages[sentMessages]! } });
      if (fields.usage.totalTokens !== lastUsage) {
        lastUsage = fields.usage.totalTokens;
        append({ type: "usage", data: { usage: fields.usage } });
      }
    },
    error: (error) => {
      if (!ended) append({ type: "run.error", data: { message: error instanceof Error ? error.message : String(error) } });
      end();
    },
    complete: () => {
      // A stopped actor completes too: the run is parked (in the store), not finished.
      if (actor.getSnapshot().status === "done" && !ended) append({ type: "run.finished", data: { output: outputView(actor.getSnapshot().output as AgentOutput) } });
      end();
    },
  });
  if (!restored) append({ type: "run.started", data: { runId: (first.context as { loop: { runId: string } }).loop.runId, agent } });
}

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
    case "guard.approval.decided":
      return {
        type: "approval.decided",
        data: { callId: event.callId, name: event.name, decision: event.decision, edited: event.edited, ...(event.reason !== undefined ? { reason: event.reason } : {}) },
      };
    default:
      return undefined;
  }
}
