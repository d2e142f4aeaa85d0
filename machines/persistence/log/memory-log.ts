import type { ToolOutcome } from "../../../actors/tool-outcome.js";
import { MemoryToolJournal, type JournalEntry, type JournalKey } from "../../../actors/tool-journal.js";
import { pendingFromSnapshot, type PendingApproval } from "../../contract/approvals.js";
import type { AgentOutput } from "../../contract/context.js";
import { CheckpointError, checkRecordId, queueOwned, type CheckpointSummary } from "../checkpoints/store.js";
import type { PersistedAgent } from "../persistence.js";
import { encodeValue, type KnownStream, type StreamRef } from "./codec.js";
import { effectiveEntries, inheritedKey, type ForkOrigin, type KeyedEntry } from "./journal-inheritance.js";
import type { CheckpointEntry, ForkRequest, LogUsage, RunBranch, RunLogStore, StoredRunStatus, ThreadRun } from "./log-store.js";
import { lineageOf } from "./lineage.js";
import { checkpointIdOf, entryOf, isFinal, metaOf, outputOfRecord, recordFrom, withParents, type CheckpointMeta } from "./records.js";
import { emptyContext, pathsOf, streamsFromRows, withStoredIds, type RunContext } from "./streams.js";
import { ThreadBusyError } from "./thread-busy.js";
import { keepFinishedProblem, PRUNE_LIMIT } from "./finished-retention.js";
import type { StoredBlob } from "../blobs.js";
import { MemoryBlobTable } from "../checkpoints/memory-blobs.js";

/** A run as the memory stores keep it: the log's bookkeeping and the run queue's columns. */
export interface MemoryRunRow {
  runId: string;
  agent: string;
  input: Record<string, unknown>;
  status: StoredRunStatus;
  owner: string | undefined;
  token: number;
  leaseUntil: number | undefined;
  wakeAt: number | undefined;
  pending: PendingApproval[];
  /** The queue's recorded output, as JSON text. */
  output: string | undefined;
  head: number | undefined;
  summary: CheckpointSummary | undefined;
  threadId: string | undefined;
  threadSeq: number | undefined;
  /** For a thread's run: the thread's run before it, whose last checkpoint its first save builds on. */
  seed: string | undefined;
  /** While the original exists: where the fork's journal continues (the original's id and what it inherits). */
  fork: ForkOrigin | undefined;
  /** The run and checkpoint this run was forked from (kept when the original is deleted). */
  forkOf: string | undefined;
  forkedFrom: number | undefined;
  createdAt: number;
  updatedAt: number;
  seq: number;
}

interface MemoryCheckpoint extends CheckpointMeta {
  refs: StreamRef[];
  skeleton: string;
}

interface MemoryStream {
  id: number;
  owner: string;
  baseId: number | null;
  baseCount: number | null;
  items: string[];
}

export interface MemoryLogOptions {
  /** Keep only the last N checkpoints of each run (and those a fork starts from). Default: all. */
  keepCheckpoints?: number;
  /** Delete finished runs this long after they ended (`pruneFinished`, finished-retention.ts). Default: kept. */
  keepFinishedMs?: number;
  now?: () => number;
}

/** What a write of a run must carry when the run queue holds it (its fencing token). */
export interface WriteFence {
  token: number;
  delivered: number;
}

/**
 * Runs as append-only logs in one process's memory: checkpoints (every one kept), streams of
 * elements (the conversation stored once), the tool journal, forks and threads. Kept as JSON text,
 * so what `load` returns went through the same round trip as a real store's. The run queue's
 * memory store builds on it.
 */
export class MemoryRunLog implements RunLogStore {
  protected readonly runs = new Map<string, MemoryRunRow>();
  private readonly checkpoints = new Map<number, MemoryCheckpoint>();
  private readonly streams = new Map<number, MemoryStream>();
  private readonly journal = new MemoryToolJournal();
  private readonly blobs = new MemoryBlobTable();
  private nextCheckpoint = 1;
  private nextStream = 1;
  private seq = 0;

  constructor(protected readonly logOptions: MemoryLogOptions = {}) {
    const problem = keepFinishedProblem(logOptions.keepFinishedMs);
    if (problem) throw new CheckpointError("(none)", `memory store: options.${problem}`);
  }

  get keepFinishedMs(): number | undefined {
    return this.logOptions.keepFinishedMs;
  }

  protected now(): number {
    return (this.logOptions.now ?? Date.now)();
  }

  /** The queue's hook: the fence a write of this run carries (undefined for a plain write). */
  protected fenceFor(_runId: string, _reading: boolean): WriteFence | undefined {
    return undefined;
  }

  /** The queue's hook: the error for a write whose fence (`token`) no longer holds (after telling the owner under it). */
  protected lost(runId: string, _token: number): Error {
    return queueOwned(runId);
  }

  /** The queue's hook: a fenced save was stored. */
  protected fencedSaveStored(_run: MemoryRunRow, _fence: WriteFence): void {}

  protected newRun(fields: Partial<MemoryRunRow> & Pick<MemoryRunRow, "runId" | "agent" | "status">): MemoryRunRow {
    const now = this.now();
    const run: MemoryRunRow = {
      input: {}, owner: undefined, token: 0, leaseUntil: undefined, wakeAt: undefined, pending: [], output: undefined, head: undefined, summary: undefined,
      threadId: undefined, threadSeq: undefined, seed: undefined, fork: undefined, forkOf: undefined, forkedFrom: undefined, createdAt: now, updatedAt: now, seq: ++this.seq, ...fields,
    };
    this.runs.set(run.runId, run);
    return run;
  }

  // ---- CheckpointStore ----

  save(runId: string, record: PersistedAgent): void {
    checkRecordId(runId, record);
    const fence = this.fenceFor(runId, false);
    let run = this.runs.get(runId);
    if (fence) {
      if (!run || run.token !== fence.token) throw this.lost(runId, fence.token);
    } else if (run && run.token > 0) {
      throw queueOwned(runId);
    }
    run ??= this.newRun({ runId, agent: record.machine, status: record.status });
    // The queue's status is the worker's to move (claim, park, finish), never a checkpoint's.
    if (!fence) run.status = record.status;
    this.append(run, record, this.contextOf(run));
    if (fence) this.fencedSaveStored(run, fence);
  }

  load(runId: string, checkpointId?: string): PersistedAgent | undefined {
    const id = checkpointId === undefined ? this.runs.get(runId)?.head : checkpointIdOf(checkpointId);
    const checkpoint = id === undefined ? undefined : this.checkpoints.get(id);
    if (!checkpoint || checkpoint.runId !== runId) return undefined;
    return recordFrom(checkpoint, checkpoint.skeleton, checkpoint.refs, this.resolve(checkpoint.refs.map(([s]) => s)), "memory");
  }

  list(): CheckpointSummary[] {
    return [...this.runs.values()].flatMap((r) => (r.summary ? [{ ...r.summary }] : [])).sort((a, b) => b.savedAt - a.savedAt);
  }

  delete(runId: string): boolean {
    const run = this.runs.get(runId);
    if (!run) {
      this.journal.forget(runId);
      return false;
    }
    this.handJournalToForks(runId);
    this.journal.forget(runId);
    this.blobs.forget(runId);
    for (const [id, checkpoint] of this.checkpoints) if (checkpoint.runId === runId) this.checkpoints.delete(id);
    this.runs.delete(runId);
    this.dropUnusedStreams();
    return true;
  }

  /** With `keepFinishedMs`: delete up to `limit` runs finished longer ago than that (finished-retention.ts). */
  pruneFinished(limit = PRUNE_LIMIT): number {
    const keep = this.logOptions.keepFinishedMs;
    if (keep === undefined) return 0;
    const before = this.now() - keep;
    const ended = (run: MemoryRunRow) => run.status === "succeeded" || run.status === "failed";
    const runs = [...this.runs.values()];
    const forked = new Set(runs.flatMap((run) => (run.forkOf !== undefined ? [run.forkOf] : [])));
    const laterEnded = (run: MemoryRunRow) => runs.some((other) => other.threadId === run.threadId && (other.threadSeq ?? 0) > (run.threadSeq ?? 0) && ended(other));
    const due = runs
      .filter((run) => ended(run) && run.updatedAt < before && !forked.has(run.runId) && (run.threadId === undefined || laterEnded(run)))
      .sort((a, b) => a.updatedAt - b.updatedAt)
      .slice(0, limit);
    for (const run of due) this.delete(run.runId);
    return due.length;
  }

  history(runId: string): CheckpointEntry[] {
    return withParents([...this.checkpoints.values()].filter((c) => c.runId === runId).sort((a, b) => a.id - b.id).map(entryOf), this.runs.get(runId)?.forkedFrom);
  }

  // ---- forks and threads ----

  fork(request: ForkRequest): void {
    const { runId, from, record, inherit } = request;
    checkRecordId(runId, record);
    if (this.runs.has(runId)) throw new CheckpointError(runId, `fork: run ${runId} already exists; choose another runId for the fork`);
    const source = this.checkpoints.get(checkpointIdOf(from.checkpointId) ?? 0);
    if (!source || source.runId !== from.runId) throw new CheckpointError(from.runId, `fork: run ${from.runId} has no checkpoint ${from.checkpointId} (see store.history(runId))`);
    const original = this.runs.get(from.runId)!;
    const run = this.newRun({ runId, agent: original.agent, status: record.status, fork: { runId: from.runId, inherit }, forkOf: from.runId, forkedFrom: source.id });
    this.append(run, record, this.contextFrom(runId, source, false));
  }

  openThreadRun(threadId: string, runId: string, machine: string): void {
    this.openThread(threadId, runId, { agent: machine, status: "running" });
  }

  /** Register a new run of the thread (the queue submits its runs through this too). */
  protected openThread(threadId: string, runId: string, fields: Partial<MemoryRunRow> & Pick<MemoryRunRow, "agent" | "status">): MemoryRunRow {
    const runs = this.threadRows(threadId);
    const active = runs.find((r) => !isFinal(r.status));
    if (active) throw new ThreadBusyError(threadId, active.runId);
    if (this.runs.has(runId)) throw new CheckpointError(runId, `run ${runId} already exists; a thread's next run needs a new run id`);
    const last = runs.at(-1);
    return this.newRun({ ...fields, runId, threadId, threadSeq: (last?.threadSeq ?? 0) + 1, seed: last?.runId });
  }

  private threadRows(threadId: string): MemoryRunRow[] {
    return [...this.runs.values()].filter((r) => r.threadId === threadId).sort((a, b) => a.threadSeq! - b.threadSeq!);
  }

  threadRuns(threadId: string): ThreadRun[] {
    return this.threadRows(threadId).map((r) => ({ runId: r.runId, status: r.status, agent: r.agent }));
  }

  lineage(runId: string): Promise<RunBranch[]> {
    return lineageOf(
      {
        forkOf: (id) => {
          const run = this.runs.get(id);
          const from = run?.forkOf !== undefined && run.forkedFrom !== undefined ? { runId: run.forkOf, checkpointId: String(run.forkedFrom) } : undefined;
          return { exists: run !== undefined, ...(from ? { forkedFrom: from } : {}) };
        },
        forks: (id) => [...this.runs.values()].filter((r) => r.forkOf === id).map((r) => r.runId),
      },
      runId,
    );
  }

  outputOf(runId: string): AgentOutput | undefined {
    const run = this.runs.get(runId);
    if (run?.output !== undefined) return JSON.parse(run.output) as AgentOutput;
    return run && isFinal(run.status) ? outputOfRecord(this.load(runId)) : undefined;
  }

  usage(runId?: string): LogUsage {
    const mine = <T extends { runId?: string; owner?: string }>(row: T) => runId === undefined || (row.runId ?? row.owner) === runId;
    const checkpoints = [...this.checkpoints.values()].filter(mine);
    const streams = [...this.streams.values()].filter(mine);
    const items = streams.flatMap((s) => s.items);
    const journal = runId === undefined ? this.journal.size : this.journal.entriesOf(runId).length;
    return {
      checkpoints: checkpoints.length,
      checkpointBytes: checkpoints.reduce((sum, c) => sum + c.skeleton.length + JSON.stringify(c.refs).length, 0),
      streams: streams.length,
      items: items.length,
      itemChars: items.reduce((sum, text) => sum + text.length, 0),
      journalEntries: journal,
    };
  }

  // ---- BlobStore (not fenced: a blob is named by its content, so a late write of a lost run changes nothing) ----

  putBlob(runId: string, sha256: string, blob: StoredBlob): void {
    this.blobs.put(runId, sha256, blob);
  }

  getBlob(runId: string, sha256: string): StoredBlob | undefined {
    return this.blobs.get(runId, sha256);
  }

  // ---- ToolJournal ----

  private checkFence(runId: string, reading: boolean): void {
    const fence = this.fenceFor(runId, reading);
    if (fence && this.runs.get(runId)?.token !== fence.token) throw this.lost(runId, fence.token);
  }

  started(key: JournalKey, name: string): boolean {
    this.checkFence(key.runId, false);
    return this.journal.started(key, name);
  }

  completed(key: JournalKey, outcome: ToolOutcome): void {
    this.checkFence(key.runId, false);
    this.journal.completed(key, outcome);
  }

  /** Fenced like the writes: a worker that lost the run must not replay the new owner's outcomes as its own. */
  lookup(key: JournalKey): JournalEntry | undefined {
    this.checkFence(key.runId, true);
    for (let at: JournalKey | undefined = key, depth = 0; at && depth < 1_000; depth++) {
      const found = this.journal.lookup(at);
      if (found) return found;
      at = inheritedKey(at, this.runs.get(at.runId)?.fork);
    }
    return undefined;
  }

  forget(runId: string): void {
    this.journal.forget(runId);
  }

  // ---- the log ----

  /** What the run's next save builds on: its latest checkpoint, or the one its thread's previous run ended with. */
  private contextOf(run: MemoryRunRow): RunContext {
    const from = this.checkpoints.get(run.head ?? (run.seed !== undefined ? this.runs.get(run.seed)?.head : undefined) ?? 0);
    return from ? this.contextFrom(run.runId, from, from.runId === run.runId) : emptyContext(run.runId);
  }

  private contextFrom(runId: string, checkpoint: MemoryCheckpoint, own: boolean): RunContext {
    const known = this.resolve(checkpoint.refs.map(([id]) => id));
    return { runId, head: own ? checkpoint.id : undefined, known, paths: pathsOf(checkpoint.skeleton, checkpoint.refs) };
  }

  private resolve(ids: readonly number[]): Map<number, KnownStream> {
    const rows: MemoryStream[] = [];
    const pending = [...ids];
    const seen = new Set<number>();
    while (pending.length > 0) {
      const stream = this.streams.get(pending.pop()!);
      if (!stream || seen.has(stream.id)) continue;
      seen.add(stream.id);
      rows.push(stream);
      if (stream.baseId !== null) pending.push(stream.baseId);
    }
    return streamsFromRows(rows, new Map(rows.map((s) => [s.id, s.items])));
  }

  /** Store `record` as the run's next checkpoint: its new streams and elements, then the checkpoint. Nothing is written when a step fails. */
  private append(run: MemoryRunRow, record: PersistedAgent, context: RunContext): void {
    const encoded = encodeValue(record, context);
    const ids = new Map(encoded.streams.map((s, i) => [s.id, this.nextStream + i]));
    const stored = withStoredIds(encoded, ids);
    // Elements go at the end of their stream (a writer that read the run before another one appended would not).
    const next = new Map<number, number>();
    for (const item of stored.items) {
      const stream = this.streams.get(item.stream);
      const expected = next.get(item.stream) ?? (stream ? (stream.baseCount ?? 0) + stream.items.length : item.seq);
      if (item.seq !== expected) throw new CheckpointError(run.runId, `save: run ${run.runId} was appended to by another writer meanwhile; load it again`);
      next.set(item.stream, expected + 1);
    }
    this.nextStream += encoded.streams.length;
    for (const s of stored.streams) this.streams.set(s.id, { id: s.id, owner: run.runId, baseId: s.base?.[0] ?? null, baseCount: s.base?.[1] ?? null, items: [] });
    for (const item of stored.items) this.streams.get(item.stream)!.items.push(item.text);
    const id = this.nextCheckpoint++;
    this.checkpoints.set(id, { id, runId: run.runId, ...metaOf(record), refs: stored.refs, skeleton: stored.skeleton });
    run.head = id;
    run.summary = { runId: run.runId, ...metaOf(record) };
    run.pending = pendingFromSnapshot(record.snapshot);
    run.updatedAt = this.now();
    this.prune(run.runId);
  }

  /** With `keepCheckpoints`: drop the run's older checkpoints, except those a fork starts from. */
  private prune(runId: string): void {
    const keep = this.logOptions.keepCheckpoints;
    if (keep === undefined) return;
    const ids = [...this.checkpoints.values()].filter((c) => c.runId === runId).map((c) => c.id).sort((a, b) => a - b);
    const forked = new Set([...this.runs.values()].flatMap((r) => (r.forkedFrom !== undefined ? [r.forkedFrom] : [])));
    for (const id of ids.slice(0, Math.max(0, ids.length - keep))) if (!forked.has(id)) this.checkpoints.delete(id);
  }

  /** A deleted run's journal stays visible to its forks: they get their own copy of what they inherited. */
  private handJournalToForks(runId: string): void {
    const chainOf = (id: string) => {
      const chain: { runId: string; origin?: ForkOrigin; entries: KeyedEntry[] }[] = [];
      for (let at: string | undefined = id; at !== undefined && chain.length < 1_000; at = this.runs.get(at)?.fork?.runId) {
        const fork = this.runs.get(at)?.fork;
        chain.push({ runId: at, ...(fork ? { origin: fork } : {}), entries: this.journal.entriesOf(at) });
      }
      return chain;
    };
    for (const fork of [...this.runs.values()].filter((r) => r.fork?.runId === runId)) {
      for (const { key, entry } of effectiveEntries(chainOf(fork.runId))) {
        if (entry.state === "completed") this.journal.completed(key, entry.outcome);
        else this.journal.started(key, entry.name);
      }
      fork.fork = undefined;
    }
  }

  /** Streams no run owns any more and no kept stream builds on. */
  private dropUnusedStreams(): void {
    for (let dropped = true; dropped; ) {
      dropped = false;
      const bases = new Set([...this.streams.values()].flatMap((s) => (s.baseId !== null ? [s.baseId] : [])));
      for (const [id, stream] of this.streams) {
        if (!this.runs.has(stream.owner) && !bases.has(id)) {
          this.streams.delete(id);
          dropped = true;
        }
      }
    }
  }
}
