import type { CheckpointSummary } from "../machines/persistence/checkpoints/store.js";
import type { RunLogStore } from "../machines/persistence/log/log-store.js";
import type { AgentOutput } from "../machines/contract/context.js";
import type { PersistedAgent } from "../machines/persistence/persistence.js";
import type { ClaimedRun, InboxEvent, ListOptions, RunCommand, RunStatusInfo, RunSummary, SubmitRequest } from "./schemas.js";
import type { RunEventLog } from "./run-events.js";

type MaybePromise<T> = T | Promise<T>;

/** A worker's claim: up to `limit` runnable runs of these agents, for `owner`, each leased for `leaseMs`. */
export interface ClaimRequest {
  owner: string;
  agents: readonly string[];
  limit: number;
  leaseMs: number;
}

/**
 * A store notices that something may be claimable, that a run finished, or that a run has new events
 * (`RunEventLog`, queue/run-events.ts); used to skip a poll.
 * `runnable` names the run that became due when the store knows it (a submit, a send to its inbox, a
 * release), so a worker looks at that run's inbox only, not at every run it holds; without `runId`
 * (an older writer) every held run looks. `finished` may carry the run's output (as stored: JSON
 * text, or the object), so a waiter needs no read; without it, the waiter reads the output.
 * `changed`: another process wrote to the store, what is not known (SQLite): a worker with a free
 * slot claims, a wait reads what it awaits.
 */
export type QueueSignal = { kind: "runnable"; runId?: string } | { kind: "finished"; runId: string; output?: unknown } | { kind: "events"; runId: string } | { kind: "changed" };

/**
 * A durable run queue: the public half (submit, send, wait, status, list) any process may call, and
 * the worker half (claim, renew, park, finish, release) that `startWorker` drives. It is also a
 * `RunLogStore` (checkpoints with their history, forks, threads, the tool journal, blobs): while a
 * worker holds a run it registers the run's fencing token with `fence()`, and from then on every
 * checkpoint and journal write of that run carries the token; a write that finds another token throws `FencedError` (after telling the fence's `onLost`).
 *
 * Large images and files of a run's checkpoints are kept apart once (`BlobStore`, machines/persistence/blobs.ts).
 * A run's stream of events is kept beside it for followers in any process (`RunEventLog`, queue/run-events.ts).
 *
 * Implementations: `MemoryRunStore` (tests, one process), `SqliteRunStore` (one machine, several
 * processes), `PostgresRunStore` (several machines).
 */
export interface RunStore extends RunLogStore, RunEventLog {
  /** Queue a run for an agent some worker knows; the same runId twice is one run. Resolves with the run id. */
  submit(request: SubmitRequest): Promise<string>;
  /** Record an approval, a rejection or a cancel for the run; true when recorded, false when the same decision was already recorded (a different one for a pending call is recorded: the run applies the first that fits). */
  send(runId: string, command: RunCommand): Promise<boolean>;
  /** Resolves with the run's output once it is finished (rejects when the signal aborts). */
  wait(runId: string, options?: { signal?: AbortSignal }): Promise<AgentOutput>;
  status(runId: string): Promise<RunStatusInfo>;
  list(): MaybePromise<CheckpointSummary[]>;
  list(options: ListOptions): Promise<RunSummary[]>;
  close(): Promise<void>;

  // ---- the worker's half ----
  /** Tell submitters which agents a worker runs (a submit for any other is refused). */
  registerAgents(agents: readonly string[]): Promise<void>;
  /** Claim up to `limit` runnable runs for these agents: each gets a lease of `leaseMs` and a new fencing token. */
  claim(request: ClaimRequest): Promise<ClaimedRun[]>;
  /** From now on, writes for this run carry this token. */
  fence(runId: string, token: number, onLost: (error: Error) => void): void;
  /** The run's writes are no longer fenced by this process. */
  unfence(runId: string): void;
  /** Mark inbox events up to this id as delivered to the run's actor (applied with the next write). */
  delivered(runId: string, throughId: number): void;
  /** Extend the lease; false when the token is no longer the run's. */
  renew(runId: string, token: number, leaseMs: number): Promise<boolean>;
  /** Inbox events not yet applied, after the given id, in order. */
  inbox(runId: string, afterId: number): Promise<InboxEvent[]>;
  /** Give the run up while it waits for a person: no owner, no lease; claimable again at `wakeAt` (a deadline) or when an event arrives. */
  park(runId: string, token: number, wakeAt: number | undefined): Promise<boolean>;
  /**
   * Record the final output and end the lease. With `lastCheckpoint` (the run's final checkpoint,
   * not saved yet) the checkpoint is stored in the same write: a finished run costs one commit, not two.
   */
  finish(runId: string, token: number, output: AgentOutput, lastCheckpoint?: PersistedAgent): Promise<boolean>;
  /**
   * Optional: `finish`, and in the same write a claim (`next`) for the slot the run frees, so a busy
   * worker's next run costs no statement of its own. `finished` is what `finish` would answer; a run
   * is claimed only when it is true. A store without it is finished, then claimed from, apart.
   */
  finishAndClaim?(runId: string, token: number, output: AgentOutput, lastCheckpoint: PersistedAgent | undefined, next: ClaimRequest): Promise<{ finished: boolean; claimed: ClaimedRun[] }>;
  /** Give the run up now so that another worker resumes it from its last checkpoint (graceful stop). */
  release(runId: string, token: number): Promise<boolean>;
  /** Be told when runs may have become claimable or finished; returns the unsubscribe. */
  subscribe(listener: (signal: QueueSignal) => void): () => void;
  /**
   * Optional, for a store whose signals come from other processes over a connection of their own
   * (PostgreSQL's LISTEN): resolves once that connection is up, or after a short bound when it cannot
   * be (polling covers the gap), never rejects. A new session signals every run to look at its inbox
   * (something may have come while nobody listened); a worker waits for this before it starts, so that
   * first signal finds no run held yet.
   */
  untilListening?(): Promise<void>;
}

/**
 * Why the queue itself failed a run, as `termination.error.kind` (reason `internalError`):
 * `unstartable`: its input or checkpoint could not be used; `unstorable`: the database refused to
 * store what it produced (its output or a checkpoint), so it could never be finished as it stood.
 */
export type QueueFailureKind = "unstartable" | "unstorable";

/** A failed run with no machine output: the output `wait` returns. */
export function failedOutput(
  runId: string,
  message: string,
  input: { messages?: AgentOutput["messages"]; state?: Record<string, unknown> } = {},
  kind: QueueFailureKind = "unstartable",
): AgentOutput {
  return {
    status: "failed",
    finalAnswer: null,
    messages: input.messages ?? [],
    rounds: 0,
    usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 },
    toolEffects: [],
    iterations: 0,
    runId,
    state: input.state ?? {},
    termination: { reason: "internalError", iterations: 0, error: { name: "RunQueueError", kind, message } },
  };
}

export { queueOwned } from "../machines/persistence/checkpoints/store.js";
