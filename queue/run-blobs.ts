import { resolveBlobs } from "../machines/persistence/blobs.js";
import { errorText, RunQueueError } from "./errors.js";
import type { RunStore } from "./run-store.js";
import type { ClaimedRun } from "./schemas.js";

/**
 * A claimed run whose checkpoint refers to stored images or files (machines/persistence/blobs.ts)
 * gets them back before its actor is restored; a checkpoint without any is handed on untouched
 * (a text search, no parse). When the store lacks one, the run cannot be restored: `problem` says why.
 * A store that cannot be reached throws instead: that is the worker's fault to retry, not the run's.
 */
export async function withStoredBlobs(run: ClaimedRun, store: RunStore): Promise<{ run: ClaimedRun; problem?: string }> {
  const text = run.checkpoint;
  if (text === undefined || !text.includes('"blob":"sha256:')) return { run };
  try {
    const resolved = await resolveBlobs(JSON.parse(text) as unknown, store, run.runId);
    return { run: { ...run, checkpoint: JSON.stringify(resolved) } };
  } catch (error) {
    if (error instanceof RunQueueError && error.problem === "connection") throw error;
    return { run, problem: errorText(error) };
  }
}
