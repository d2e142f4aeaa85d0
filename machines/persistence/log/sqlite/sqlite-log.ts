import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import Database from "better-sqlite3";
import type { ToolOutcome } from "../../../../actors/tool-outcome.js";
import type { JournalEntry, JournalKey } from "../../../../actors/tool-journal.js";
import { pendingFromSnapshot } from "../../../contract/approvals.js";
import type { AgentOutput } from "../../../contract/context.js";
import { CheckpointError, checkRecordId, journalEntryOf, queueOwned, type CheckpointSummary } from "../../checkpoints/store.js";
import type { PersistedAgent, RunStatus } from "../../persistence.js";
import { encodeValue, type KnownStream, type StreamRef } from "../codec.js";
import { packOutcome, storedOutcome } from "../journal-packing.js";
import { RunContextCache } from "../context-cache.js";
import { effectiveEntries, inheritedKey, readInheritance, type ForkOrigin, type KeyedEntry } from "../journal-inheritance.js";
import type { CheckpointEntry, ForkRequest, LogUsage, RunBranch, RunLogStore, ThreadRun } from "../log-store.js";
import { lineageOf } from "../lineage.js";
import { decodeOutput, encodeOutput, outputRefs } from "../outputs.js";
import { keyframesAfter, packCheckpoint, splitText } from "../packing.js";
import { checkpointIdOf, damaged, isFinal, outputOfRecord, recordFrom, withParents } from "../records.js";
import { entryFromText, keyframesAt, type StoredCheckpoint } from "../stored-checkpoint.js";
import { contextAfter, emptyContext, pathsOf, withStoredIds, type RunContext } from "../streams.js";
import { SqliteCheckpointRows } from "./checkpoint-rows.js";
import type { StoredBlob } from "../../blobs.js";
import { SqliteBlobTable } from "../../checkpoints/sqlite-blobs.js";
import { pruneKeepingSql } from "../retention.js";
import { finishedRunsSql, PRUNE_LIMIT } from "../finished-retention.js";
import { ThreadBusyError } from "../thread-busy.js";
import { migrate } from "./migrate.js";
import type { SqliteRunRow } from "./schema.js";
import { SqliteStreamReader } from "./stream-reader.js";

/** What a write of a run must carry when the run queue holds it (its fencing token). */
export interface SqliteWriteFence {
  token: number;
  delivered: number;
}

export interface SqliteLogConfig {
  path: string;
  busyTimeoutMs: number;
  /** Keep only the last N checkpoints of each run (and those a fork starts from). Default: all. */
  keepCheckpoints?: number;
  /** Delete finished runs this long after they ended (`pruneFinished`). Default: kept. */
  keepFinishedMs?: number;
  /** The error a store reports for a file it cannot open or migrate. */
  fail: (kind: "open" | "schema", message: string, cause: unknown) => Error;
}

/**
 * Why `new Database()` failed, in one line. A native module that cannot be loaded (no prebuilt
 * binary and no compiler, or one built for another Node) says so with kilobytes of searched paths:
 * name the cause and the fix instead.
 */
function openFailure(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  if (/bindings file|better_sqlite3\.node|NODE_MODULE_VERSION|invalid ELF|was compiled against/i.test(message)) {
    return `better-sqlite3's native module cannot be loaded on Node ${process.versions.node} (${message.split("\n")[0]!.slice(0, 120)}): run \`npm rebuild better-sqlite3\` (it needs a prebuilt binary for this platform or a C++ toolchain)`;
  }
  return message;
}

/**
 * The run log in one SQLite file (schema.ts): the embedded default. WAL mode with full sync, so a
 * checkpoint or journal row is on disk before the run moves on, and several processes share the
 * file. Everything is synchronous: a checkpoint is written before the state it records moves on.
 * `SqliteCheckpointStore` is this; `SqliteRunStore` adds the run queue.
 */
export class SqliteRunLog implements RunLogStore {
  readonly path: string;
  protected readonly db: Database.Database;
  private readonly cache = new RunContextCache();
  private readonly reader: SqliteStreamReader;
  private readonly checkpoints: SqliteCheckpointRows;
  private readonly statements = new Map<string, Database.Statement>();
  private readonly keepCheckpoints: number | undefined;
  readonly keepFinishedMs: number | undefined;
  /** Large images and files of each run, stored once (machines/persistence/blobs.ts). */
  private readonly blobs: SqliteBlobTable;

  constructor(config: SqliteLogConfig) {
    this.path = config.path;
    this.keepCheckpoints = config.keepCheckpoints;
    this.keepFinishedMs = config.keepFinishedMs;
    try {
      if (config.path !== ":memory:") mkdirSync(dirname(config.path), { recursive: true });
      this.db = new Database(config.path, { timeout: config.busyTimeoutMs });
    } catch (error) {
      throw config.fail("open", `cannot open ${config.path}: ${openFailure(error)}`, error);
    }
    this.reader = new SqliteStreamReader((sql) => this.sql(sql));
    this.checkpoints = new SqliteCheckpointRows((sql) => this.sql(sql), config.path);
    try {
      this.db.pragma("journal_mode = WAL");
      // FULL: a committed journal row survives a power cut, not only a killed process.
      this.db.pragma("synchronous = FULL");
      migrate(this.db, (runId, record) => this.append(this.runRow(runId)!, record, this.contextFor(runId)));
      this.blobs = new SqliteBlobTable(this.db, "jianmu_blobs");
    } catch (error) {
      this.db.close();
      throw config.fail("schema", `${config.path}: ${error instanceof Error ? error.message : String(error)}`, error);
    }
  }

  /** A prepared statement, made once per store. */
  protected sql(text: string): Database.Statement {
    let statement = this.statements.get(text);
    if (!statement) {
      if (!this.db.open) throw this.closedError();
      this.statements.set(text, (statement = this.db.prepare(text)));
    }
    return statement;
  }

  protected closedError(): Error {
    return new CheckpointError("(none)", `the store at ${this.path} is closed; open a new one`);
  }

  /** The queue's hook: the fence a write (or, `reading`, a journal read) of this run carries; undefined for a plain one. */
  protected fenceFor(_runId: string, _reading: boolean): SqliteWriteFence | undefined {
    return undefined;
  }

  /** The queue's hook: the error for a write whose fence (`token`) no longer holds (after telling the run's owner under it). */
  protected lost(runId: string, _token: number): Error {
    return queueOwned(runId);
  }

  /** The queue's hook, inside the save's transaction: a fenced save was stored. */
  protected fencedSaveStored(_runId: string, _fence: SqliteWriteFence): void {}

  /** The queue's hook around a fenced write's transaction (a file locked too long gives the run up). */
  protected holding<T>(_runId: string, _token: number, transaction: () => T): T {
    return transaction();
  }

  protected runRow(runId: string): SqliteRunRow | undefined {
    return this.sql(`SELECT * FROM jianmu_runs WHERE run_id = ?`).get(runId) as SqliteRunRow | undefined;
  }

  // ---- CheckpointStore ----

  save(runId: string, record: PersistedAgent): void {
    checkRecordId(runId, record);
    const fence = this.fenceFor(runId, false);
    const write = this.db.transaction(() => {
      const row = this.runRow(runId);
      if (fence) {
        if (row?.token !== fence.token) return "lost" as const;
      } else if (row && row.token > 0) {
        throw queueOwned(runId);
      }
      if (!row) {
        const now = Date.now();
        this.sql(`INSERT INTO jianmu_runs (run_id, agent, status, created_at, updated_at) VALUES (?, ?, ?, ?, ?)`).run(runId, record.machine, record.status, now, now);
      }
      const context = this.contextFor(runId, row);
      const next = this.append(row ?? this.runRow(runId)!, record, context);
      // The queue's status is the worker's to move (claim, park, finish), never a checkpoint's.
      if (!fence) this.sql(`UPDATE jianmu_runs SET status = ? WHERE run_id = ?`).run(record.status, runId);
      else this.fencedSaveStored(runId, fence);
      return next;
    });
    const done = fence ? this.holding(runId, fence.token, () => write.immediate()) : write.immediate();
    // "lost" comes only from a fenced write.
    if (done === "lost") throw this.lost(runId, fence?.token ?? -1);
    this.cache.set(done);
  }

  load(runId: string, checkpointId?: string): PersistedAgent | undefined {
    const id = checkpointId === undefined ? null : checkpointIdOf(checkpointId);
    const found = id === undefined ? undefined : this.checkpoints.ofRun(runId, id);
    if (!found) return undefined;
    const { refs, skeleton } = this.split(found.row);
    const cached = checkpointId === undefined ? this.cache.get(runId, found.head) : undefined;
    return recordFrom({ id: found.row.id, runId }, skeleton, refs, cached?.known ?? this.streams(runId, found.row.id, refs, false), this.path);
  }

  /** The streams a checkpoint refers to (a lost element is a CheckpointError naming the checkpoint). */
  private streams(runId: string, checkpointId: number, refs: readonly StreamRef[], forWriting: boolean): Map<number, KnownStream> {
    try {
      return this.reader.read(runId, refs, forWriting);
    } catch (error) {
      return damaged(runId, checkpointId, this.path, error);
    }
  }

  /** A checkpoint's refs and skeleton (a damaged one is a CheckpointError naming it). */
  private split(checkpoint: StoredCheckpoint) {
    const text = this.checkpoints.text(checkpoint);
    try {
      return { text, ...splitText(text) };
    } catch (error) {
      return damaged(checkpoint.runId, checkpoint.id, this.path, error);
    }
  }

  list(): CheckpointSummary[] {
    const rows = this.sql(`SELECT run_id, agent, machine, state, status, iteration, saved_at FROM jianmu_runs WHERE head IS NOT NULL ORDER BY saved_at DESC, run_id`).all() as SqliteRunRow[];
    return rows.map((row) => ({
      runId: row.run_id,
      machine: row.machine ?? row.agent,
      state: row.state ?? "",
      status: (row.status === "queued" ? "running" : row.status) as RunStatus,
      iteration: row.iteration,
      savedAt: row.saved_at ?? 0,
    }));
  }

  delete(runId: string): boolean {
    const deleted = this.db.transaction(() => {
      this.handJournalToForks(runId);
      this.sql(`DELETE FROM jianmu_journal WHERE run_id = ?`).run(runId);
      this.sql(`DELETE FROM jianmu_inbox WHERE run_id = ?`).run(runId);
      this.sql(`DELETE FROM jianmu_events WHERE run_id = ?`).run(runId);
      this.blobs.forget(runId);
      const row = this.runRow(runId);
      if (!row) return false;
      this.sql(`DELETE FROM jianmu_checkpoints WHERE run_key = ?`).run(row.run_key);
      this.sql(`DELETE FROM jianmu_runs WHERE run_key = ?`).run(row.run_key);
      this.dropUnusedStreams(row.run_key);
      return true;
    }).immediate();
    this.cache.delete(runId);
    return deleted;
  }

  /** With `keepFinishedMs`: delete up to `limit` runs finished longer ago than that (finished-retention.ts). */
  pruneFinished(limit = PRUNE_LIMIT): number {
    if (this.keepFinishedMs === undefined) return 0;
    const due = this.sql(finishedRunsSql("jianmu_runs", "@before", "@limit")).all({ before: Date.now() - this.keepFinishedMs, limit }) as { run_id: string }[];
    let pruned = 0;
    for (const { run_id } of due) if (this.delete(run_id)) pruned++;
    return pruned;
  }

  history(runId: string): CheckpointEntry[] {
    const run = this.runRow(runId);
    if (!run) return [];
    const entries = this.checkpoints.history(run.run_key).map(({ row, text }) => {
      try {
        return entryFromText(row, text);
      } catch (error) {
        return damaged(runId, row.id, this.path, error);
      }
    });
    return withParents(entries, run.fork_checkpoint);
  }

  // ---- forks and threads ----

  fork(request: ForkRequest): void {
    const { runId, from, record, inherit } = request;
    checkRecordId(runId, record);
    const next = this.db.transaction(() => {
      if (this.runRow(runId)) throw new CheckpointError(runId, `fork: run ${runId} already exists; choose another runId for the fork`);
      const sourceId = checkpointIdOf(from.checkpointId);
      const original = this.runRow(from.runId);
      const source = sourceId === undefined || !original ? undefined : this.checkpoints.get(sourceId, original.run_key);
      if (!source || !original) throw new CheckpointError(from.runId, `fork: run ${from.runId} has no checkpoint ${from.checkpointId} (see store.history(runId))`);
      const now = Date.now();
      this.sql(`INSERT INTO jianmu_runs (run_id, agent, status, fork_of, fork_checkpoint, inherit, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`).run(
        runId, original.agent, record.status, from.runId, source.id, JSON.stringify(inherit), now, now,
      );
      return this.append(this.runRow(runId)!, record, this.contextFrom(runId, source.id, false));
    }).immediate();
    this.cache.set(next);
  }

  openThreadRun(threadId: string, runId: string, machine: string): void {
    this.insertThreadRun(threadId, runId, { agent: machine, status: "running", input: "{}", wakeAt: null });
  }

  /** Register a new run of the thread (the queue submits its runs through this too). Refused while the thread's latest run has not ended. */
  protected insertThreadRun(threadId: string, runId: string, run: { agent: string; status: "running" | "queued"; input: string; wakeAt: number | null }): void {
    this.db.transaction(() => {
      const active = this.sql(`SELECT run_id FROM jianmu_runs WHERE thread_id = ? AND status IN ('queued', 'running', 'awaitingApproval')`).get(threadId) as { run_id: string } | undefined;
      if (active) throw new ThreadBusyError(threadId, active.run_id);
      if (this.runRow(runId)) throw new CheckpointError(runId, `run ${runId} already exists; a thread's next run needs a new run id`);
      const last = this.sql(`SELECT thread_seq, run_id FROM jianmu_runs WHERE thread_id = ? ORDER BY thread_seq DESC LIMIT 1`).get(threadId) as { thread_seq: number; run_id: string } | undefined;
      const now = Date.now();
      this.sql(
        `INSERT INTO jianmu_runs (run_id, agent, input, status, wake_at, thread_id, thread_seq, seed, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ).run(runId, run.agent, run.input, run.status, run.wakeAt, threadId, (last?.thread_seq ?? 0) + 1, last?.run_id ?? null, now, now);
    }).immediate();
  }

  threadRuns(threadId: string): ThreadRun[] {
    const rows = this.sql(`SELECT run_id, status, agent FROM jianmu_runs WHERE thread_id = ? ORDER BY thread_seq`).all(threadId) as { run_id: string; status: ThreadRun["status"]; agent: string }[];
    return rows.map((row) => ({ runId: row.run_id, status: row.status, agent: row.agent }));
  }

  lineage(runId: string): Promise<RunBranch[]> {
    return lineageOf(
      {
        forkOf: (id) => {
          const row = this.runRow(id);
          const from = row?.fork_of != null && row.fork_checkpoint != null ? { runId: row.fork_of, checkpointId: String(row.fork_checkpoint) } : undefined;
          return { exists: row !== undefined, ...(from ? { forkedFrom: from } : {}) };
        },
        forks: (id) => (this.sql(`SELECT run_id FROM jianmu_runs WHERE fork_of = ? ORDER BY run_key`).all(id) as { run_id: string }[]).map((r) => r.run_id),
      },
      runId,
    );
  }

  outputOf(runId: string): AgentOutput | undefined {
    const row = this.runRow(runId);
    if (!row) return undefined;
    if (row.output !== null) return this.decodeOutput(runId, row.output);
    return isFinal(row.status) ? outputOfRecord(this.load(runId)) : undefined;
  }

  /** The queue's stored output: encoded against the run's streams (outputs.ts), or plain JSON from an earlier release. */
  protected encodeOutput(runId: string, output: AgentOutput): string {
    const context = this.cache.get(runId, this.runRow(runId)?.head) ?? this.contextFor(runId);
    return encodeOutput(output, context);
  }

  protected decodeOutput(runId: string, text: string): AgentOutput {
    try {
      return decodeOutput(text, this.reader.read(runId, outputRefs(text), false));
    } catch (error) {
      return damaged(runId, "output", this.path, error);
    }
  }

  usage(runId?: string): LogUsage {
    const key = runId === undefined ? undefined : (this.runRow(runId)?.run_key ?? -1);
    const mine = (column: string) => (key === undefined ? "" : ` WHERE ${column} = ${key}`);
    const checkpoints = this.sql(`SELECT count(*) AS n, coalesce(sum(length(body)), 0) AS bytes FROM jianmu_checkpoints${mine("run_key")}`).get() as { n: number; bytes: number };
    const streams = this.sql(`SELECT count(*) AS n FROM jianmu_streams${mine("run_key")}`).get() as { n: number };
    const items = this.sql(`SELECT count(*) AS n, coalesce(sum(length(body)), 0) AS chars FROM jianmu_items i JOIN jianmu_streams s ON s.id = i.stream_id${mine("s.run_key")}`).get() as { n: number; chars: number };
    const journal = (runId === undefined ? this.sql(`SELECT count(*) AS n FROM jianmu_journal`).get() : this.sql(`SELECT count(*) AS n FROM jianmu_journal WHERE run_id = ?`).get(runId)) as { n: number };
    return { checkpoints: checkpoints.n, checkpointBytes: checkpoints.bytes, streams: streams.n, items: items.n, itemChars: items.chars, journalEntries: journal.n };
  }

  // ---- BlobStore (not fenced: a blob is named by its content, so a late write of a lost run changes nothing) ----

  putBlob(runId: string, sha256: string, blob: StoredBlob): void {
    this.blobs.put(runId, sha256, blob);
  }

  getBlob(runId: string, sha256: string): StoredBlob | undefined {
    return this.blobs.get(runId, sha256);
  }

  // ---- ToolJournal ----

  /** Runs `work` in one transaction with the token check; throws FencedError when the token moved on. */
  private fenced<T>(runId: string, reading: boolean, work: () => T): T {
    const fence = this.fenceFor(runId, reading);
    if (!fence) return work();
    const result = this.holding(runId, fence.token, () => this.db.transaction(() => {
      const current = this.sql(`SELECT token FROM jianmu_runs WHERE run_id = ?`).get(runId) as { token: number } | undefined;
      if (current?.token !== fence.token) return { lost: true as const };
      return { lost: false as const, value: work() };
    }).immediate());
    if (result.lost) throw this.lost(runId, fence.token);
    return result.value;
  }

  /** An atomic claim: insert-if-absent, so of two processes sharing the file only one wins. */
  started(key: JournalKey, name: string): boolean {
    return this.fenced(key.runId, false, () =>
      this.sql(`INSERT INTO jianmu_journal (run_id, iteration, call_id, name, state, updated_at) VALUES (?, ?, ?, ?, 'started', ?) ON CONFLICT DO NOTHING`).run(key.runId, key.iteration, key.callId, name, Date.now()).changes === 1,
    );
  }

  completed(key: JournalKey, outcome: ToolOutcome): void {
    this.fenced(key.runId, false, () =>
      this.sql(
        `INSERT INTO jianmu_journal (run_id, iteration, call_id, name, state, outcome, updated_at) VALUES (?, ?, ?, ?, 'completed', ?, ?)
         ON CONFLICT (run_id, iteration, call_id) DO UPDATE SET name = excluded.name, state = 'completed', outcome = excluded.outcome, updated_at = excluded.updated_at WHERE state = 'started'`,
      ).run(key.runId, key.iteration, key.callId, outcome.name, packOutcome(outcome), Date.now()),
    );
  }

  /** Fenced like the writes: a worker that lost the run must not replay the new owner's outcomes as its own. A fork asks its original for the calls it inherited. */
  lookup(key: JournalKey): JournalEntry | undefined {
    const read = (at: JournalKey) => this.sql(`SELECT name, state, outcome FROM jianmu_journal WHERE run_id = ? AND iteration = ? AND call_id = ?`).get(at.runId, at.iteration, at.callId) as
      | { name: string; state: "started" | "completed"; outcome: Buffer | string | null }
      | undefined;
    return this.fenced(key.runId, true, () => {
      for (let at: JournalKey | undefined = key, depth = 0; at && depth < 1_000; depth++) {
        const row = read(at);
        if (row) return journalEntryOf({ ...row, outcome: storedOutcome(row.outcome) }, at, this.path);
        at = inheritedKey(at, this.originOf(at.runId));
      }
      return undefined;
    });
  }

  forget(runId: string): void {
    this.sql(`DELETE FROM jianmu_journal WHERE run_id = ?`).run(runId);
  }

  /** Close the database (idempotent). The store cannot be used afterwards. */
  close(): void {
    if (this.db.open) this.db.close();
  }

  // ---- the log ----

  private originOf(runId: string): ForkOrigin | undefined {
    const row = this.sql(`SELECT fork_of, inherit FROM jianmu_runs WHERE run_id = ?`).get(runId) as { fork_of: string | null; inherit: string | null } | undefined;
    const inherit = readInheritance(row?.inherit);
    return row?.fork_of && inherit ? { runId: row.fork_of, inherit } : undefined;
  }

  /** What the run's next save builds on (cached when this process wrote it last). */
  private contextFor(runId: string, row = this.runRow(runId)): RunContext {
    const cached = this.cache.get(runId, row?.head);
    if (cached) return cached;
    if (row?.head != null) return this.contextFrom(runId, row.head, true);
    const seed = row?.seed != null ? this.runRow(row.seed)?.head : undefined;
    if (seed != null) return this.contextFrom(runId, seed, false);
    return emptyContext(runId);
  }

  private contextFrom(runId: string, checkpointId: number, own: boolean): RunContext {
    const checkpoint = this.checkpoints.get(checkpointId);
    if (!checkpoint) return emptyContext(runId);
    const { text, refs, skeleton } = this.split(checkpoint);
    const base = { runId, head: own ? checkpoint.id : undefined, known: this.streams(runId, checkpoint.id, refs, true), paths: pathsOf(skeleton, refs) };
    if (!own) return base;
    try {
      return { ...base, keyframe: keyframesAt(checkpoint, text, this.checkpoints.keyframe) };
    } catch (error) {
      return damaged(runId, checkpoint.id, this.path, error);
    }
  }

  /** Store `record` as the run's next checkpoint (inside the caller's transaction); returns what the save after it starts from. */
  private append(run: SqliteRunRow, record: PersistedAgent, context: RunContext): RunContext {
    const runId = run.run_id;
    const encoded = encodeValue(record, context);
    const ids = new Map<number, number>();
    for (const stream of encoded.streams) {
      const base = stream.base ? [ids.get(stream.base[0]) ?? stream.base[0], stream.base[1]] : [null, null];
      ids.set(stream.id, Number(this.sql(`INSERT INTO jianmu_streams (run_key, base_id, base_count) VALUES (?, ?, ?)`).run(run.run_key, base[0], base[1]).lastInsertRowid));
    }
    const stored = withStoredIds(encoded, ids);
    const insertItem = this.sql(`INSERT INTO jianmu_items (stream_id, seq, body) VALUES (?, ?, ?)`);
    for (const item of stored.items) insertItem.run(item.stream, item.seq, item.text);
    const packed = packCheckpoint(stored.refs, stored.skeleton, context.keyframe);
    const id = this.checkpoints.insert(run.run_key, packed, context.keyframe?.id);
    this.sql(`UPDATE jianmu_runs SET head = ?, machine = ?, state = ?, iteration = ?, saved_at = ?, pending = ?, updated_at = ? WHERE run_id = ?`).run(
      id, record.machine, record.state, record.iteration, record.savedAt, JSON.stringify(pendingFromSnapshot(record.snapshot)), Date.now(), runId,
    );
    this.prune(run);
    return contextAfter(context, stored, id, keyframesAfter(packed, id, context.keyframe));
  }

  /** With `keepCheckpoints`: drop the run's older checkpoints, except those a fork starts from and the keyframes the kept ones need. */
  private prune(run: SqliteRunRow): void {
    if (this.keepCheckpoints === undefined) return;
    this.sql(`${pruneKeepingSql("jianmu_checkpoints", "jianmu_runs", { key: "@key", id: "@run" }, "@keep")} DELETE FROM jianmu_checkpoints WHERE run_key = @key AND id NOT IN (SELECT id FROM needed)`).run({
      key: run.run_key,
      run: run.run_id,
      keep: this.keepCheckpoints,
    });
  }

  /** A deleted run's journal stays visible to its forks: they get their own copy of what they inherited. */
  private handJournalToForks(runId: string): void {
    const forks = this.sql(`SELECT run_id FROM jianmu_runs WHERE fork_of = ?`).all(runId) as { run_id: string }[];
    const entries = (id: string): KeyedEntry[] =>
      (this.sql(`SELECT iteration, call_id, name, state, outcome FROM jianmu_journal WHERE run_id = ?`).all(id) as { iteration: number; call_id: string; name: string; state: "started" | "completed"; outcome: Buffer | string | null }[]).map(
        (row) => {
          const key = { runId: id, iteration: row.iteration, callId: row.call_id };
          return { key, entry: journalEntryOf({ ...row, outcome: storedOutcome(row.outcome) }, key, this.path) };
        },
      );
    for (const { run_id: fork } of forks) {
      const chain: { runId: string; origin?: ForkOrigin; entries: KeyedEntry[] }[] = [];
      for (let at: string | undefined = fork; at !== undefined && chain.length < 1_000; ) {
        const origin = this.originOf(at);
        chain.push({ runId: at, ...(origin ? { origin } : {}), entries: entries(at) });
        at = origin?.runId;
      }
      for (const { key, entry } of effectiveEntries(chain)) {
        this.sql(`INSERT INTO jianmu_journal (run_id, iteration, call_id, name, state, outcome, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`).run(
          key.runId, key.iteration, key.callId, entry.state === "completed" ? entry.outcome.name : entry.name, entry.state, entry.state === "completed" ? packOutcome(entry.outcome) : null, Date.now(),
        );
      }
      // It keeps naming the run it was forked from (history, lineage); it inherits nothing more.
      this.sql(`UPDATE jianmu_runs SET inherit = NULL WHERE run_id = ?`).run(fork);
    }
  }

  /** The deleted run's streams, unless a kept stream builds on them (then they stay until that one goes); then the bases they freed. */
  private dropUnusedStreams(runKey: number): void {
    let candidates = (this.sql(`SELECT id FROM jianmu_streams WHERE run_key = ?`).all(runKey) as { id: number }[]).map((row) => row.id);
    while (candidates.length > 0) {
      const next: number[] = [];
      for (const id of candidates) {
        const row = this.sql(`SELECT run_key, base_id FROM jianmu_streams WHERE id = ?`).get(id) as { run_key: number; base_id: number | null } | undefined;
        if (!row || this.sql(`SELECT 1 FROM jianmu_runs WHERE run_key = ?`).get(row.run_key) || this.sql(`SELECT 1 FROM jianmu_streams WHERE base_id = ?`).get(id)) continue;
        this.sql(`DELETE FROM jianmu_items WHERE stream_id = ?`).run(id);
        this.sql(`DELETE FROM jianmu_streams WHERE id = ?`).run(id);
        if (row.base_id !== null) next.push(row.base_id);
      }
      candidates = next;
    }
  }
}
