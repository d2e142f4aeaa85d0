import type { PersistedAgent } from "../persistence.js";
import { isBlobStore, resolveBlobs } from "../blobs.js";
import type { CheckpointStore } from "./store.js";

/**
 * A run's latest checkpoint as it was saved, ready for `restoreAgent`: the large images and files
 * its store keeps apart (machines/persistence/blobs.ts) are put back into its messages. Undefined
 * when the store has no checkpoint for the run. Use it wherever a checkpoint is read to be restored or shown.
 */
export async function loadCheckpoint(store: CheckpointStore, runId: string): Promise<PersistedAgent | undefined> {
  const record = await store.load(runId);
  if (record === undefined || !isBlobStore(store)) return record;
  return resolveBlobs(record, store, runId);
}
