import { z } from "zod";
import type { ToolJournal } from "../../../actors/tool-journal.js";
import type { AgentOutput } from "../../contract/context.js";
import { RunStatusSchema } from "../../contract/run-status.js";
import type { CheckpointStore } from "../checkpoints/store.js";
import type { PersistedAgent } from "../persistence.js";
import type { BlobStore } from "../blobs.js";
import type { JournalInheritance } from "./journal-inheritance.js";
import type { PrunesFinished } from "./finished-retention.js";

type MaybePromise<T> = T | Promise<T>;

/** One saved checkpoint of a run, as `history()` lists it (oldest first). */
export const CheckpointEntrySchema = z.object({
  /** Opaque; pass it to `load(runId, checkpointId)` and `forkRun(..., { from })`. */
  checkpointId: z.string(),
  runId: z.string(),
  /** Dotted state path, e.g. `Evaluating.ChildRunning.AgentLLM`. */
  state: z.string(),
  status: RunStatusSchema,
  /** Completed loop iterations when it was saved. */
  iteration: z.number().int().min(0),
  /** Epoch milliseconds (the envelope's `savedAt`). */
  at: z.number(),
  /** The checkpoint saved before it in this run; a fork's first checkpoint names the one it was forked from (in the original run). */
  parentId: z.string().optional(),
});
export type CheckpointEntry = z.infer<typeof CheckpointEntrySchema>;

/** Where a queued, running or finished run stands in a store (the run queue's statuses; `queued`: not yet claimed). */
export type StoredRunStatus = z.infer<typeof RunStatusSchema> | "queued";

/** A run of a thread, in the order the thread ran them. */
export interface ThreadRun {
  runId: string;
  status: StoredRunStatus;
  /** What the run was started for: the queue's agent name (`submit({ agent })`), or the machine's id for a run started in process. */
  agent: string;
}

/** A run of a fork tree: its id, and the checkpoint of another run it was forked from (absent for the tree's root). */
export interface RunBranch {
  runId: string;
  forkedFrom?: { runId: string; checkpointId: string };
}

/** What a store holds, counted (all runs, or one run's own rows): for tests and the bench. */
export interface LogUsage {
  checkpoints: number;
  /** Bytes of the checkpoints' bodies (the skeletons, compressed where the store compresses). */
  checkpointBytes: number;
  streams: number;
  /** Stored elements (messages and the other big arrays' entries), one row each. */
  items: number;
  /** Characters of JSON text of those elements. */
  itemChars: number;
  journalEntries: number;
}

/** The store's part of `forkRun`: the new run, its first checkpoint, and which of the original's journal it inherits. */
export interface ForkRequest {
  runId: string;
  from: { runId: string; checkpointId: string };
  /** The fork's first checkpoint (the original's, rewritten for the new run id). */
  record: PersistedAgent;
  inherit: JournalInheritance;
}

/**
 * A store that keeps each run as an append-only log: every checkpoint (history), the conversation
 * stored once, element by element, forks that share what they were forked from, and threads; large
 * images and files once per run, by content hash (`BlobStore`, machines/persistence/blobs.ts).
 * `MemoryCheckpointStore`, `SqliteCheckpointStore`, `MemoryRunStore`, `SqliteRunStore` and
 * `PostgresRunStore` all are one. Methods may be synchronous (memory, SQLite) or return promises.
 */
export interface RunLogStore extends CheckpointStore, ToolJournal, BlobStore, PrunesFinished {
  /** The run's latest checkpoint, or the one named (undefined when there is none). */
  load(runId: string, checkpointId?: string): MaybePromise<PersistedAgent | undefined>;
  /** Every checkpoint of the run still kept, oldest first ([] for an unknown run). */
  history(runId: string): MaybePromise<CheckpointEntry[]>;
  /** Create a run from another's checkpoint (use `forkRun`, which builds the request). */
  fork(request: ForkRequest): MaybePromise<void>;
  /**
   * Start a run of a thread: refused with `ThreadBusyError` while the thread's latest run has not
   * ended. Creates the run (no checkpoint yet) under `runId`, for machine `machine`.
   */
  openThreadRun(threadId: string, runId: string, machine: string): MaybePromise<void>;
  /** The thread's runs in order ([] for an unknown thread). */
  threadRuns(threadId: string): MaybePromise<ThreadRun[]>;
  /** The fork tree holding the run: its root first, then each run after the one it was forked from ([] for an unknown run). */
  lineage(runId: string): MaybePromise<RunBranch[]>;
  /** The run's output once it has ended (its final checkpoint's, or what the queue recorded). */
  outputOf(runId: string): MaybePromise<AgentOutput | undefined>;
  /** What the store holds: every run, or one run's own rows (not what it shares with the run it was forked from). */
  usage(runId?: string): MaybePromise<LogUsage>;
}

/** Whether `store` keeps runs as logs (history, forks, threads). */
export function isRunLogStore(store: unknown): store is RunLogStore {
  const s = store as Partial<RunLogStore> | null;
  return typeof s === "object" && s !== null && typeof s.history === "function" && typeof s.fork === "function" && typeof s.openThreadRun === "function";
}
