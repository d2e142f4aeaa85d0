import type { AgentContext } from "../context.js";
import { statePath } from "../state-path.js";

/**
 * The states worth a checkpoint: each is the start of a step whose inputs are all in context.
 * - AgentLLM: an iteration begins (the previous one's tool results are in the messages);
 * - AwaitingApproval: the run waits for a person, maybe for days (saved again as decisions arrive);
 * - Executing: the approved batch is fixed; a restore re-runs the executor, which asks the journal;
 * - Delegating, HandingOff: a nested agent runs; saved again whenever the nested agent reaches one
 *   of these moments itself (its snapshot lives inside this agent's).
 * Final states are saved too. Nothing else is (no save per text delta or tool progress).
 */
const CHECKPOINT_STATES = new Set(["AgentLLM", "AwaitingApproval", "Executing", "Delegating", "HandingOff"]);

export interface AgentSnapshotLike {
  status: string;
  value: unknown;
  context: AgentContext;
}

/** Identifies a checkpoint-worthy moment; undefined for the moments in between. */
export function momentOf(snapshot: AgentSnapshotLike): string | undefined {
  if (snapshot.status === "done") return "final";
  if (snapshot.status !== "active") return undefined;
  const path = statePath(snapshot.value);
  const leaf = path.slice(path.lastIndexOf(".") + 1);
  if (!CHECKPOINT_STATES.has(leaf)) return undefined;
  const loop = snapshot.context.loop;
  // In AwaitingApproval each approval or rejection is worth keeping: the approver need not repeat it.
  const decisions = leaf === "AwaitingApproval" ? loop.decisions.map((d) => `${d.callId}:${d.status}`).join(",") : "";
  const nested = loop.delegation?.moment;
  return `${path}|${loop.iteration}|${decisions}${nested ? `|${nested}` : ""}`;
}
