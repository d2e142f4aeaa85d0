import { ToolOutcomeSchema, type JournalEntry, type JournalKey } from "../../../actors/tool-journal.js";
import type { PersistedAgent } from "../persistence.js";
import { JianmuError } from "../../../tools/jianmu-error.js";

type MaybePromise<T> = T | Promise<T>;

/** What `list()` tells about a saved run, without reading its snapshot: the envelope's summary fields (`PersistedAgentSchema`). */
export type CheckpointSummary = Pick<PersistedAgent, "runId" | "machine" | "state" | "status" | "iteration" | "savedAt">;

/**
 * Where runs are checkpointed: the latest saved snapshot of each run, by run id. Methods may be
 * synchronous (SQLite, memory) or return promises (a remote store); callers await them.
 */
export interface CheckpointStore {
  /** Replace the run's checkpoint with this one. */
  save(runId: string, record: PersistedAgent): MaybePromise<void>;
  /** The run's latest checkpoint (envelope checked), or undefined when there is none. */
  load(runId: string): MaybePromise<PersistedAgent | undefined>;
  /** Every saved run, most recently saved first. */
  list(): MaybePromise<CheckpointSummary[]>;
  /** Remove the run's checkpoint (and its tool journal, when the store keeps one). True when one existed. */
  delete(runId: string): MaybePromise<boolean>;
}

/** A checkpoint could not be saved, or a store was used wrongly. Names the run. */
export class CheckpointError extends JianmuError {
  static override readonly errorCode = "CHECKPOINT_ERROR";
  override name = "CheckpointError";
  constructor(
    readonly runId: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** A plain checkpoint write (no fence) for a run the queue's workers hold: refused. */
export function queueOwned(runId: string): CheckpointError {
  return new CheckpointError(runId, `run ${runId} belongs to the run queue: only the worker holding it writes its checkpoints; use another runId for runAgent`);
}

export function summaryOf(record: PersistedAgent): CheckpointSummary {
  return {
    runId: record.runId,
    machine: record.machine,
    state: record.state,
    status: record.status,
    iteration: record.iteration,
    savedAt: record.savedAt,
  };
}

/** A store keeps one run's checkpoint under that run's id: refuse a record filed under another. */
export function checkRecordId(runId: string, record: PersistedAgent): void {
  if (typeof runId !== "string" || runId === "") throw new CheckpointError(String(runId), "save: runId must be a non-empty string");
  if (record?.runId !== runId) {
    throw new CheckpointError(runId, `save: the record belongs to run ${JSON.stringify(record?.runId)}, not ${JSON.stringify(runId)}; save it as save(record.runId, record)`);
  }
}

/** A journal entry as a store keeps it: the outcome as JSON text (SQLite) or an already parsed value (PostgreSQL jsonb). */
export interface StoredJournalRow {
  name: string;
  state: JournalEntry["state"];
  outcome: unknown;
}

/**
 * A stored JSON value as a store hands it back: text (SQLite, memory) is parsed, a value PostgreSQL
 * already parsed passes as it is, and text that is not JSON becomes undefined (for the caller's schema to refuse).
 */
export function storedJson(stored: unknown): unknown {
  if (typeof stored !== "string") return stored;
  try {
    return JSON.parse(stored);
  } catch {
    return undefined;
  }
}

/**
 * Every store reads its journal back through this: a completed outcome is checked against its schema,
 * and a damaged one is a `CheckpointError` naming the call and `where` it is kept, never a half-read entry.
 */
export function journalEntryOf(row: StoredJournalRow, key: JournalKey, where: string): JournalEntry {
  if (row.state === "started") return { state: "started", name: row.name };
  const checked = ToolOutcomeSchema.safeParse(storedJson(row.outcome));
  if (!checked.success) throw new CheckpointError(key.runId, `tool journal in ${where}: the outcome of call ${key.callId} (iteration ${key.iteration}) is damaged`);
  return { state: "completed", outcome: checked.data };
}
