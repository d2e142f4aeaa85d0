import type { PersistedAgent } from "../persistence.js";
import { isBlobStore, resolveBlobs } from "../blobs.js";
import { isRunLogStore } from "../log/log-store.js";
import { CheckpointError, type CheckpointStore } from "./store.js";

/**
 * A run's checkpoint as it was saved, ready for `restoreAgent`: its latest, or with `checkpointId`
 * any one its history lists (jianmu's stores keep them all). The large images and files its store
 * keeps apart (machines/persistence/blobs.ts) are put back into its messages. Undefined when the
 * store has no such checkpoint. Use it wherever a checkpoint is read to be restored or shown.
 */
export async function loadCheckpoint(store: CheckpointStore, runId: string, checkpointId?: string): Promise<PersistedAgent | undefined> {
  let record: PersistedAgent | undefined;
  if (checkpointId === undefined) record = await store.load(runId);
  else if (isRunLogStore(store)) record = await store.load(runId, checkpointId);
  else throw new CheckpointError(runId, `loadCheckpoint: this store keeps one checkpoint per run; checkpoint ${checkpointId} needs one of jianmu's stores (they keep every checkpoint)`);
  if (record === undefined || !isBlobStore(store)) return record;
  return resolveBlobs(record, store, runId);
}
