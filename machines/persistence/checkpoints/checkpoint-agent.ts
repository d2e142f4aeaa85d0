import type { Actor, AnyStateMachine } from "xstate";
import { persistAgent, type PersistedAgent } from "../persistence.js";
import { momentOf, type AgentSnapshotLike } from "../../contract/moment.js";
import { CheckpointError, type CheckpointStore } from "./store.js";
import { BlobCollector, isBlobStore, type BlobStore, type StoredBlob } from "../blobs.js";

export interface CheckpointOptions {
  /** Called for every failed save (the run goes on; `flush()` also rejects with the first failure). */
  onError?: (error: CheckpointError) => void;
  /** Clock for `savedAt`. */
  now?: () => number;
}

export interface CheckpointHandle {
  /** Resolves when every save so far is stored; rejects with the first failure since the last flush. */
  flush(): Promise<void>;
  /** Stop saving (the last saved checkpoint stays in the store). */
  stop(): void;
  /** How many checkpoints were written (or handed to an async store). */
  readonly saves: number;
}

/**
 * Save the agent to the store at every stable state (the states tagged `checkpoint`, see moment.ts). Attach before
 * `actor.start()` to catch the first one. Pair it with `createReactMachine({ journal: store })`
 * so a run restored from the `Executing` checkpoint does not run its tools again.
 *
 * With a synchronous store (SQLite, memory) the checkpoint is written before the step it records
 * begins; an asynchronous store's saves are queued in order.
 */
export function checkpointAgent<M extends AnyStateMachine>(actor: Actor<M>, store: CheckpointStore, options: CheckpointOptions = {}): CheckpointHandle {
  const now = options.now ?? Date.now;
  let last: string | undefined;
  let saves = 0;
  let queue: Promise<void> | undefined; // set while an asynchronous save is outstanding
  let failure: CheckpointError | undefined;

  const fault = (runId: string, error: unknown) => {
    const wrapped =
      error instanceof CheckpointError
        ? error
        : new CheckpointError(runId, `checkpoint of run ${runId} was not saved: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    failure ??= wrapped;
    options.onError?.(wrapped);
  };

  /** Keep `queue` set while an asynchronous save is outstanding; saves after it wait their turn. */
  const track = (pending: Promise<void>) => {
    const tracked: Promise<void> = pending.finally(() => {
      if (queue === tracked) queue = undefined;
    });
    queue = tracked;
  };

  // A store that keeps blobs gets large images and files once per run; its checkpoints refer to them (blobs.ts).
  const blobs = isBlobStore(store) ? new BlobCollector() : undefined;

  const write = (record: PersistedAgent) => {
    saves += 1;
    const failed = (error: unknown) => fault(record.runId, error);
    const fresh = blobs?.take() ?? [];
    const save = fresh.length === 0 ? () => store.save(record.runId, record) : () => saveWithBlobs(store as CheckpointStore & BlobStore, record, fresh, blobs!);
    if (queue) {
      track(queue.then(save).then(undefined, failed));
      return;
    }
    try {
      const result = save();
      if (result !== undefined && typeof (result as PromiseLike<void>).then === "function") track(Promise.resolve(result).then(undefined, failed));
    } catch (error) {
      failed(error);
    }
  };

  const subscription = actor.subscribe({
    next: (snapshot) => {
      const moment = momentOf(snapshot as unknown as AgentSnapshotLike);
      if (moment === undefined || moment === last) return;
      last = moment;
      let record: PersistedAgent;
      try {
        record = persistAgent(actor, now, blobs);
      } catch (error) {
        fault((snapshot as unknown as AgentSnapshotLike).context?.loop?.runId ?? "(unknown)", error);
        return;
      }
      write(record);
    },
    // A machine error is the run's own business (runAgent reports it); nothing to save.
    error: () => undefined,
  });

  return {
    async flush() {
      while (queue) await queue;
      if (failure) {
        const first = failure;
        failure = undefined;
        throw first;
      }
    },
    stop() {
      subscription.unsubscribe();
    },
    get saves() {
      return saves;
    },
  };
}

/**
 * The blobs first, then the checkpoint that refers to them: a crash in between leaves a blob no
 * checkpoint names (deleted with the run), never a checkpoint naming a blob that is not there.
 * Synchronous when the store is; a blob that failed to store is offered again with the next save.
 */
function saveWithBlobs(store: CheckpointStore & BlobStore, record: PersistedAgent, fresh: { sha256: string; blob: StoredBlob }[], blobs: BlobCollector): void | Promise<void> {
  const undo = (error: unknown) => {
    blobs.forget(fresh.map((item) => item.sha256));
    throw error;
  };
  let pending: Promise<void> | undefined;
  for (const { sha256, blob } of fresh) {
    const put = () => store.putBlob(record.runId, sha256, blob);
    if (pending) {
      pending = pending.then(put);
      continue;
    }
    try {
      const result = put();
      if (result !== undefined && typeof (result as PromiseLike<void>).then === "function") pending = Promise.resolve(result);
    } catch (error) {
      undo(error);
    }
  }
  if (!pending) return store.save(record.runId, record);
  return pending.then(() => store.save(record.runId, record), undo);
}
