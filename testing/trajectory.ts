import type { InspectionEvent } from "xstate";
import type { AgentEmitted } from "../machines/contract/events.js";
import { activeStatePaths } from "../machines/contract/state-path.js";

/**
 * What a run did, as an eval reads it: the states of the chart it went through, and the tool calls it
 * made, in order. The states are the chart's own (`Evaluating.ChildRunning.AgentLLM`,
 * `...AwaitingApproval`, `GuardingOutput`, ...), so an eval can say "asked a person before it paid"
 * or "never compacted", which no transcript of messages shows.
 */
export interface Trajectory {
  /**
   * Each state configuration the top agent entered, those it only passed through on the way
   * included, as its active leaf paths joined by " | " (parallel regions), in order, without repeats
   * in a row.
   */
  states: string[];
  /** The top agent's tool calls, in the order they started. */
  toolCalls: ToolCallRecord[];
}

export interface ToolCallRecord {
  callId: string;
  name: string;
  /** The arguments as the call ran with them (JSON text). */
  arguments: string;
  /** How it ended: ran and answered, ran and failed, never ran (a guard or a person said no), or not yet. */
  outcome: "completed" | "failed" | "denied" | "unfinished";
}

/**
 * Builds a run's trajectory from what `runAgent` hands its `inspect` and `onEvent` options. Only the
 * top agent's: a nested agent's states and calls are its own (they reach the top as the one tool call
 * that started it).
 */
export class TrajectoryRecorder {
  private readonly states: string[] = [];
  private readonly calls = new Map<string, ToolCallRecord>();

  readonly inspect = (event: InspectionEvent): void => {
    // Microsteps too: a state the run passes through within one step (CheckAbort, CheckBudget, Retry) is in no snapshot that settles.
    if ((event.type !== "@xstate.microstep" && event.type !== "@xstate.snapshot") || event.actorRef.sessionId !== event.rootId) return;
    const value = (event.snapshot as { value?: unknown }).value;
    const at = activeStatePaths(value).join(" | ");
    if (at !== "" && this.states.at(-1) !== at) this.states.push(at);
  };

  readonly onEvent = (event: AgentEmitted): void => {
    if (event.agentPath !== undefined) return;
    switch (event.type) {
      case "tool.call.started":
        this.calls.set(event.callId, { callId: event.callId, name: event.name, arguments: event.arguments, outcome: "unfinished" });
        return;
      case "tool.call.completed":
      case "tool.call.failed":
      case "tool.call.denied": {
        const known = this.calls.get(event.callId);
        const outcome = event.type === "tool.call.completed" ? "completed" : event.type === "tool.call.failed" ? "failed" : "denied";
        // A call denied before it started (a guard's verdict) has no start: it joins here.
        this.calls.set(event.callId, { ...(known ?? { callId: event.callId, name: event.name, arguments: "" }), outcome });
        return;
      }
      default:
        return;
    }
  };

  get trajectory(): Trajectory {
    return { states: [...this.states], toolCalls: [...this.calls.values()].map((call) => ({ ...call })) };
  }
}
