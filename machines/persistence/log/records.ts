import { checkedEnvelope, type PersistedAgent } from "../persistence.js";
import { CheckpointError } from "../checkpoints/store.js";
import type { AgentOutput } from "../../contract/context.js";
import { DamagedSkeleton, type KnownStream, type StreamRef } from "./codec.js";
import type { CheckpointEntry, StoredRunStatus } from "./log-store.js";
import { decodeSkeleton } from "./streams.js";

/** A checkpoint as every store knows it (the body aside): what `history()` and `list()` show. */
export interface CheckpointMeta {
  id: number;
  runId: string;
  machine: string;
  state: string;
  status: PersistedAgent["status"];
  iteration: number;
  savedAt: number;
}

export function metaOf(record: PersistedAgent): Omit<CheckpointMeta, "id" | "runId"> {
  return { machine: record.machine, state: record.state, status: record.status, iteration: record.iteration, savedAt: record.savedAt };
}

export function entryOf(meta: Omit<CheckpointMeta, "machine">): CheckpointEntry {
  return { checkpointId: String(meta.id), runId: meta.runId, state: meta.state, status: meta.status, iteration: meta.iteration, at: meta.savedAt };
}

/**
 * A run's history with each checkpoint's parent: the one saved before it in the run (the one before
 * it still kept, under `keepCheckpoints`), and for a fork's first, the checkpoint it was forked from.
 * Stores keep no parent per checkpoint: the order and the run's fork point say it.
 */
export function withParents(entries: CheckpointEntry[], forkedFrom: number | null | undefined): CheckpointEntry[] {
  return entries.map((entry, i) => {
    const parent = i > 0 ? entries[i - 1]!.checkpointId : forkedFrom != null ? String(forkedFrom) : undefined;
    return parent !== undefined ? { ...entry, parentId: parent } : entry;
  });
}

/** A checkpoint id from its text form, or undefined when it cannot name one. */
export function checkpointIdOf(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  return /^[1-9]\d{0,15}$/.test(text) ? Number(text) : undefined;
}

/** Turns a decoding problem into a CheckpointError naming the checkpoint and where it is kept. */
export function damaged(runId: string, checkpoint: number | string, where: string, error: unknown): never {
  if (error instanceof DamagedSkeleton) throw new CheckpointError(runId, `checkpoint ${checkpoint} of run ${runId} in ${where} is damaged: ${error.message}`, { cause: error });
  throw error;
}

/** The saved record a stored checkpoint holds: its skeleton with the streams put back, checked as `restoreAgent` checks it. */
export function recordFrom(meta: Pick<CheckpointMeta, "id" | "runId">, skeleton: string, refs: readonly StreamRef[], streams: ReadonlyMap<number, KnownStream>, where: string): PersistedAgent {
  try {
    // Its size and nesting were checked part by part (decodeSkeleton): the envelope's checks remain.
    return checkedEnvelope(decodeSkeleton(skeleton, refs, streams).value);
  } catch (error) {
    return damaged(meta.runId, meta.id, where, error);
  }
}

/** The output of a final record (undefined while the run has not ended). */
export function outputOfRecord(record: PersistedAgent | undefined): AgentOutput | undefined {
  if (!record || (record.status !== "succeeded" && record.status !== "failed")) return undefined;
  return (record.snapshot as { output?: AgentOutput }).output;
}

export function isFinal(status: StoredRunStatus): boolean {
  return status === "succeeded" || status === "failed";
}
