import type { CallDecision } from "../actors/call-decision.js";
import { STATE_TAGS, tagsAt } from "../machines/contract/state-tags.js";

/**
 * A stored run's approvals, read from its checkpoints (it has no telemetry): the calls a person was
 * asked about, and how each ended. A run saves on entering the wait for approval and again after each
 * decision; the last decision of a batch moves it on, so the checkpoint after the wait has it.
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

/** `Evaluating.ChildRunning.AwaitingApproval` as the state value XState keeps. */
function valueOf(path: string): unknown {
  return path
    .split(".")
    .reduceRight<unknown>((below, key) => (below === undefined ? key : { [key]: below }), undefined);
}

/**
 * Which checkpoints say how the run's approvals went: each one saved while it waited for a person
 * (the chart's `approval` tag), and the one after it.
 */
export function approvalCheckpoints(machine: { root: unknown }, history: readonly HistoryEntry[]): string[] {
  const wanted = new Set<number>();
  history.forEach((entry, index) => {
    if (!tagsAt(machine, valueOf(entry.state)).has(STATE_TAGS.approval)) return;
    wanted.add(index);
    if (index + 1 < history.length) wanted.add(index + 1);
  });
  return [...wanted].sort((a, b) => a - b).map((index) => history[index]!.checkpointId);
}

/** The approvals those checkpoints show (oldest first): each call asked about once, with its last decision. */
export function approvalsIn(snapshots: readonly unknown[]): StoredApprovals {
  // By iteration and call id: a model may use a call id again in a later round.
  const last = new Map<string, CallDecision["status"]>();
  for (const snapshot of snapshots) {
    const loop = (snapshot as { context?: { loop?: { iteration?: number; decisions?: CallDecision[] } } } | undefined)?.context?.loop;
    for (const decision of loop?.decisions ?? []) {
      const key = `${loop?.iteration ?? 0}:${decision.callId}`;
      // A call the guard allowed or denied was never put to a person.
      if (decision.status === "pending" || last.has(key)) last.set(key, decision.status);
    }
  }
  const statuses = [...last.values()];
  return { asked: statuses.length, approved: statuses.filter((s) => s === "approved").length, rejected: statuses.filter((s) => s === "rejected").length };
}
