import type { Message } from "../../actors/messages.js";
import type { Usage } from "../../actors/model-client.js";
import { pendingApprovals } from "../../machines/contract/approvals.js";
import type { AgentContext, AgentOutput } from "../../machines/contract/context.js";
import { runStatusOf, statePath } from "../../machines/persistence/persistence.js";
import { stateAccessOf, type ReactMachine } from "../../machines/react-machine.js";
import { hasStateTag, STATE_TAGS } from "../../machines/contract/state-tags.js";
import type { ChartPosition, RunOutputView, RunSnapshot } from "../protocol.js";

/** What the handler reads from a live snapshot or a stored one (XState's persisted snapshot). */
export interface SnapshotLike {
  status: string;
  value: unknown;
  context: AgentContext;
  output?: unknown;
  /** Present on a live snapshot; a stored one is read against its machine's definition. */
  hasTag?: (tag: string) => boolean;
}

const ZERO: Usage = { promptTokens: 0, completionTokens: 0, totalTokens: 0 };

export function positionOf(snapshot: SnapshotLike): ChartPosition {
  const value = snapshot.value;
  return { value: typeof value === "string" ? value : (value as Record<string, unknown>), path: statePath(value) };
}

/** The agent's fields, read through its namespace and key remapping. */
export function fieldsOf(machine: ReactMachine, snapshot: SnapshotLike) {
  const access = stateAccessOf(machine);
  const read = <T>(field: string, fallback: T): T => {
    if (!access) return fallback;
    const value = access.read<T | undefined>(snapshot.context.state, field);
    return value === undefined ? fallback : value;
  };
  return {
    messages: read<Message[]>("messages", []),
    usage: read<Usage>("usage", ZERO),
    streamingText: read<string>("streamingOutput", ""),
  };
}

/** The end of a run without its conversation and state (those travel separately). */
export function outputView(output: AgentOutput): RunOutputView {
  return {
    status: output.status,
    finalAnswer: output.finalAnswer,
    rounds: output.rounds,
    iterations: output.iterations,
    usage: output.usage,
    toolEffects: output.toolEffects,
    ...(output.termination
      ? {
          termination: {
            reason: output.termination.reason,
            iterations: output.termination.iterations,
            ...(output.termination.detail !== undefined ? { detail: output.termination.detail } : {}),
            ...(output.termination.error ? { error: { name: output.termination.error.name, message: output.termination.error.message } } : {}),
          },
        }
      : {}),
  };
}

export function runSnapshotOf(agent: string, machine: ReactMachine, snapshot: SnapshotLike): RunSnapshot {
  const fields = fieldsOf(machine, snapshot);
  const done = snapshot.status === "done" && snapshot.output !== undefined;
  const state = positionOf(snapshot);
  // streamingOutput keeps the last reply's text after it became a message: only a reply still
  // being streamed (the model step is running) is news to a page that joins now.
  const streaming = snapshot.status === "active" && hasStateTag(snapshot, STATE_TAGS.modelCall, machine);
  return {
    runId: snapshot.context.loop.runId,
    agent,
    status: runStatusOf(snapshot, machine),
    state,
    messages: fields.messages,
    streamingText: streaming ? fields.streamingText : "",
    pendingApprovals: snapshot.status === "active" ? pendingApprovals(snapshot) : [],
    usage: fields.usage,
    output: done ? outputView(snapshot.output as AgentOutput) : null,
  };
}
