import type { CallDecision } from "../actors/call-decision.js";
import { stateValue } from "../machines/contract/state-path.js";
import { STATE_TAGS, tagsAt } from "../machines/contract/state-tags.js";

/**
 * A stored run's approvals, read from its checkpoints (it has no telemetry): the calls a person was
 * asked about, its nested agents' included, and how each ended. A run saves on entering the wait for
 * approval and again after each decision; the last decision of a batch moves it on, so the
 * checkpoint after the wait has it.
 */
export interface StoredApprovals {
  asked: number;
  approved: number;
  rejected: number;
}

/** One checkpoint as `history()` lists it: its dotted state path. */
interface HistoryEntry {
  checkpointId: string;
  state: string;
}

/**
 * Which checkpoints say how the run's approvals went: each one saved while it waited for a person
 * (the chart's `approval` tag) and the one after it, and each one saved while a nested agent ran
 * (`nestedAgent`: the run is saved again at each of the nested agent's moments, its waits included).
 */
export function approvalCheckpoints(machine: { root: unknown }, history: readonly HistoryEntry[]): string[] {
  const wanted = new Set<number>();
  history.forEach((entry, index) => {
    const tags = tagsAt(machine, stateValue(entry.state));
    if (tags.has(STATE_TAGS.nestedAgent)) wanted.add(index);
    if (!tags.has(STATE_TAGS.approval)) return;
    wanted.add(index);
    if (index + 1 < history.length) wanted.add(index + 1);
  });
  return [...wanted].sort((a, b) => a - b).map((index) => history[index]!.checkpointId);
}

/** A saved agent as far as the count reads it: its decisions, and its children (nested agents among them). */
interface SavedAgent {
  context?: { loop?: { iteration?: number; decisions?: CallDecision[] } };
  children?: Record<string, { snapshot?: SavedAgent } | undefined>;
}

/** How deep nested agents are followed: never this deep. */
const MAX_DEPTH = 64;

/** Each decision of `agent` and of its nested agents, with where it was made (agent path, iteration, call id). */
function decisionsIn(agent: SavedAgent | undefined, path: string, depth: number, found: (key: string, status: CallDecision["status"]) => void): void {
  if (!agent || depth > MAX_DEPTH) return;
  const loop = agent.context?.loop;
  // By iteration and call id: a model may use a call id again in a later round.
  for (const decision of loop?.decisions ?? []) found(`${path}|${loop?.iteration ?? 0}|${decision.callId}`, decision.status);
  // A nested agent starts over for each call of it: the round that called it tells two calls apart.
  for (const [id, child] of Object.entries(agent.children ?? {})) decisionsIn(child?.snapshot, `${path}|${loop?.iteration ?? 0}/${id}`, depth + 1, found);
}

/** The approvals those checkpoints show (oldest first): each call asked about once, with its last decision. */
export function approvalsIn(snapshots: readonly unknown[]): StoredApprovals {
  const last = new Map<string, CallDecision["status"]>();
  for (const snapshot of snapshots) {
    decisionsIn(snapshot as SavedAgent | undefined, "", 0, (key, status) => {
      // A call the guard allowed or denied was never put to a person.
      if (status === "pending" || last.has(key)) last.set(key, status);
    });
  }
  const statuses = [...last.values()];
  return { asked: statuses.length, approved: statuses.filter((s) => s === "approved").length, rejected: statuses.filter((s) => s === "rejected").length };
}
