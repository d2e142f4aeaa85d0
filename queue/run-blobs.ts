import { resolveBlobs } from "../machines/persistence/blobs.js";
import { errorText, RunQueueError } from "./errors.js";
import type { RunStore } from "./run-store.js";
import type { ClaimedRun } from "./schemas.js";

/**
 * A claimed run whose checkpoint refers to stored images or files (machines/persistence/blobs.ts)
 * gets them back before its actor is restored; a checkpoint without any is handed on as it is.
 * When the store lacks one, the run cannot be restored: `problem` says why.
 * A store that cannot be reached throws instead: that is the worker's fault to retry, not the run's.
 */
export async function withStoredBlobs(run: ClaimedRun, store: RunStore): Promise<{ run: ClaimedRun; problem?: string }> {
  if (run.checkpoint === undefined) return { run };
  try {
    return { run: { ...run, checkpoint: await resolveBlobs(run.checkpoint, store, run.runId) } };
  } catch (error) {
    if (error instanceof RunQueueError && error.problem === "connection") throw error;
    return { run, problem: errorText(error) };
  }
}
