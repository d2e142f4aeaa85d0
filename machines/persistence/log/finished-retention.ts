/*
 * `keepFinishedMs` in every store: a finished run (succeeded or failed) is deleted whole (its
 * checkpoints, journal, elements no other run builds on, blobs and events: `delete(runId)`) once it
 * has been finished that long. A run is kept while it is queued, running or parked, while a fork of
 * it is stored, and while it is the latest ended run of its thread (the thread's next run starts from
 * its final messages). A sweep deletes at most `limit` runs, so it never holds a store for long.
 */

type MaybePromise<T> = T | Promise<T>;

/** How many finished runs one sweep deletes at most. */
export const PRUNE_LIMIT = 100;

/** A store that deletes its finished runs after `keepFinishedMs` (every jianmu store; a no-op without the option). */
export interface PrunesFinished {
  /** The store's `keepFinishedMs` option (undefined: finished runs are kept). */
  readonly keepFinishedMs: number | undefined;
  /** Delete up to `limit` runs finished more than `keepFinishedMs` ago; resolves with how many went (0 without `keepFinishedMs`). */
  pruneFinished(limit?: number): MaybePromise<number>;
}

export function prunesFinished(store: unknown): store is PrunesFinished {
  return typeof store === "object" && store !== null && typeof (store as Partial<PrunesFinished>).pruneFinished === "function";
}

/** How often a handler or worker sweeps for a store's `keepFinishedMs` (never more than once a minute is needed). */
export function sweepEveryMs(keepFinishedMs: number): number {
  return Math.max(50, Math.min(keepFinishedMs / 2, 60_000));
}

/** Checks the option the same way in every store: a positive whole number of milliseconds, or absent. */
export function keepFinishedProblem(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  return typeof value === "number" && Number.isInteger(value) && value > 0 ? undefined : "keepFinishedMs must be a positive integer (milliseconds a finished run is kept), e.g. 7 * 24 * 3_600_000";
}

/**
 * The runs one sweep deletes, for SQLite and PostgreSQL alike (`runs` is the runs table; `before`
 * and `limit` are the placeholders): finished before `before`, no fork of it stored, and for a
 * thread's run, a later run of the thread has ended too.
 */
export function finishedRunsSql(runs: string, before: string, limit: string): string {
  return `SELECT r.run_id FROM ${runs} r
    WHERE r.status IN ('succeeded', 'failed') AND r.updated_at < ${before}
      AND NOT EXISTS (SELECT 1 FROM ${runs} f WHERE f.fork_of = r.run_id)
      AND (r.thread_id IS NULL OR EXISTS (SELECT 1 FROM ${runs} l WHERE l.thread_id = r.thread_id AND l.thread_seq > r.thread_seq AND l.status IN ('succeeded', 'failed')))
    ORDER BY r.updated_at LIMIT ${limit}`;
}

/**
 * Sweep a store with `keepFinishedMs` every `sweepEveryMs` until stopped: one sweep at a time (a
 * slow one is never stacked), each bounded by PRUNE_LIMIT, failures told to `onError` (the next
 * sweep tries again). A store without the option is never swept. The timer keeps no process alive.
 */
export function sweepFinishedRuns(store: unknown, onError: (error: Error) => void): { stop(): void } {
  const keep = prunesFinished(store) ? store.keepFinishedMs : undefined;
  if (!prunesFinished(store) || keep === undefined) return { stop: () => undefined };
  let sweeping = false;
  const timer = setInterval(() => {
    if (sweeping) return;
    sweeping = true;
    Promise.resolve()
      .then(() => store.pruneFinished())
      .catch((error: unknown) => onError(error instanceof Error ? error : new Error(String(error))))
      .finally(() => (sweeping = false));
  }, sweepEveryMs(keep));
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
