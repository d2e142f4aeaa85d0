import type { AgentContext } from "./context.js";
import { statePath } from "./state-path.js";
import { STATE_TAGS } from "./state-tags.js";

export interface AgentSnapshotLike {
  status: string;
  value: unknown;
  context: AgentContext;
  /** XState's tag lookup of a live snapshot: which moments count is the chart's knowledge (its tags). */
  hasTag(tag: string): boolean;
}

/**
 * The states worth a checkpoint carry the chart's `checkpoint` tag: each is the start of a step whose inputs are all in context.
 * - AgentLLM: an iteration begins (the previous one's tool results are in the messages);
 * - AwaitingApproval: the run waits for a person, maybe for days (saved again as decisions arrive);
 * - Executing: the approved batch is fixed; a restore re-runs the executor, which asks the journal;
 * - Compacting, when it summarizes: the summary is a model call (a restore asks for it again);
 * - Delegating, HandingOff: a nested agent runs; saved again whenever the nested agent reaches one
 *   of these moments itself (its snapshot lives inside this agent's).
 * Final states are saved too. Nothing else is (no save per text delta or tool progress).
 *
 * Identifies a checkpoint-worthy moment; undefined for the moments in between.
 */
export function momentOf(snapshot: AgentSnapshotLike): string | undefined {
  if (snapshot.status === "done") return "final";
  if (snapshot.status !== "active") return undefined;
  if (!snapshot.hasTag(STATE_TAGS.checkpoint)) return undefined;
  const path = statePath(snapshot.value);
  const loop = snapshot.context.loop;
  // While waiting for approval each approval or rejection is worth keeping: the approver need not repeat it.
  const decisions = snapshot.hasTag(STATE_TAGS.approval) ? loop.decisions.map((d) => `${d.callId}:${d.status}`).join(",") : "";
  const nested = loop.delegation?.moment;
  return `${path}|${loop.iteration}|${decisions}${nested ? `|${nested}` : ""}`;
}
