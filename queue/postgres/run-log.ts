import type pg from "pg";
import type { ToolOutcome } from "../../actors/tool-outcome.js";
import type { JournalEntry, JournalKey } from "../../actors/tool-journal.js";
import { pendingFromSnapshot } from "../../machines/contract/approvals.js";
import type { AgentOutput } from "../../machines/contract/context.js";
import { CheckpointError, checkRecordId, journalEntryOf, queueOwned, type CheckpointSummary } from "../../machines/persistence/checkpoints/store.js";
import type { PersistedAgent, RunStatus } from "../../machines/persistence/persistence.js";
import { encodeValue, type Encoded, type KnownStream } from "../../machines/persistence/log/codec.js";
import { RunContextCache } from "../../machines/persistence/log/context-cache.js";
import { outcomeApart, packOutcomeApart, toolResultsAmong } from "../../machines/persistence/log/journal-packing.js";
import { effectiveEntries, inheritedKey, readInheritance, type ForkOrigin, type KeyedEntry } from "../../machines/persistence/log/journal-inheritance.js";
import type { CheckpointEntry, ForkRequest, LogUsage, RunBranch, RunLogStore, ThreadRun } from "../../machines/persistence/log/log-store.js";
import { lineageOf } from "../../machines/persistence/log/lineage.js";
import { decodeOutput, encodeOutput, outputRefs } from "../../machines/persistence/log/outputs.js";
import { keyframesAfter, packCheckpoint, splitText, type PackedCheckpoint } from "../../machines/persistence/log/packing.js";
import { checkpointIdOf, damaged, isFinal, outputOfRecord, recordFrom, withParents } from "../../machines/persistence/log/records.js";
import { entryFromText, keyframesAt, type KnownKeyframe, type StoredCheckpoint } from "../../machines/persistence/log/stored-checkpoint.js";
import { contextAfter, emptyContext, pathsOf, withStoredIds, type RunContext } from "../../machines/persistence/log/streams.js";
import { PgCheckpointRows } from "./checkpoint-rows.js";
import { pruneKeepingSql } from "../../machines/persistence/log/retention.js";
import { finishedRunsSql, PRUNE_LIMIT } from "../../machines/persistence/log/finished-retention.js";
import { ThreadBusyError } from "../../machines/persistence/log/thread-busy.js";
import { RunQueueError } from "../errors.js";
import type { StoredBlob } from "../../machines/persistence/blobs.js";
import { isStorableText, storableKey } from "../storable.js";
import { explainPgError, pgFaultOf, type ServerNaming } from "./errors.js";
import { insertCheckpoint, insertStreamsSql, nextStreamIds, readStreams, streamParams, type Query } from "./log-rows.js";
import { NOW, preparedName } from "./statements.js";
import type { ResolvedOptions } from "./options.js";

/** What a write of a run must carry when the run queue holds it (its fencing token). */
export interface PgWriteFence {
  token: number;
  delivered: number;
}

/**
 * What a finished run's last checkpoint also writes, in the save's statement (the queue's `finish`):
 * the final status, the output (encoded against the streams this save stores) and the lease's end,
 * with a notification. One statement and one commit instead of a save and then a hand-back.
 */
export interface LastSave {
  status: string;
  output: (context: RunContext) => string;
  channel: string;
  notify: string;
  /**
   * More of the same statement (the queue's claim of a next run): CTEs after the save's, their
   * parameters numbered from `at`, and an expression whose value the save resolves with.
   */
  also?: (at: number) => { ctes: string; values: unknown[]; select: string };
}

/** A journal row as lookups read it (see PostgresRunLog.journalColumns). */
interface JournalRow {
  name: string;
  state: "started" | "completed";
  outcome: unknown;
  packed: Buffer | null;
  content: Buffer | null;
  element: string | null;
}

/** A run's fork columns. */
interface OriginRow {
  fork_of: string | null;
  inherit: string | null;
}

/** An encoded save with its stream ids and packed skeleton, ready to write. */
interface Planned {
  stored: Encoded;
  packed: PackedCheckpoint;
  context: RunContext;
}

/**
 * The run log on PostgreSQL (migration 4 in migrations.ts): every checkpoint, streams of elements
 * (the conversation stored once), the tool journal, forks and threads. A save is one statement,
 * conditional on the run's head (and, for a claimed run, its fencing token): the store remembers
 * the runs it wrote last (their streams' texts), so a save writes only what is new. `PostgresRunStore`
 * builds the run queue on it.
 */
export class PostgresRunLog implements RunLogStore {
  protected closed = false;
  private readonly cache = new RunContextCache();
  private readonly origins = new Map<string, ForkOrigin | null>();
  private spareStreamIds: number[] = [];
  private readonly checkpoints: PgCheckpointRows;

  protected constructor(
    protected readonly pool: pg.Pool,
    protected readonly options: ResolvedOptions,
    protected readonly server: ServerNaming,
  ) {
    this.checkpoints = new PgCheckpointRows(options.schema, `schema ${options.schema}`);
  }

  /** The schema the tables live in. */
  get schema(): string {
    return this.options.schema;
  }

  /** One statement; a failure becomes a RunQueueError naming `where` (the call and the value that failed). */
  protected async query<R extends pg.QueryResultRow>(text: string, values: unknown[] = [], where?: string): Promise<pg.QueryResult<R>> {
    if (this.closed) throw new RunQueueError("closed", "this PostgresRunStore is closed; connect a new one");
    try {
      const name = this.options.prepare ? preparedName(text) : undefined;
      return await this.pool.query<R>(name ? { name, text, values } : { text, values });
    } catch (error) {
      if (pgFaultOf(error) === "tooManyClients") this.refusedConnection();
      throw explainPgError(error, this.server, where);
    }
  }

  /** The queue's hook: the server refused this store a connection. */
  protected refusedConnection(): void {}

  /** The run has no checkpoint and no seed (the queue's claim read so): its next save builds on nothing. */
  protected knownFresh(runId: string): void {
    this.cache.set(emptyContext(runId));
  }

  /** The queue's hook around a statement of a run it holds (retried while the lease lasts, see PostgresRunStore). */
  protected held<T>(_runId: string, _token: number, statement: (attempt: number) => Promise<T>, _giveUp = true): Promise<T> {
    return statement(0);
  }

  private readonly run = ((text: string, values?: unknown[]) => this.query(text, values)) as Query;

  protected t(name: string): string {
    return `${this.options.schema}.${name}`;
  }

  /** Several statements in one transaction on one connection. */
  protected async transaction<T>(work: (query: Query) => Promise<T>): Promise<T> {
    if (this.closed) throw new RunQueueError("closed", "this PostgresRunStore is closed; connect a new one");
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (error) {
      throw explainPgError(error, this.server);
    }
    const query = (async (text: string, values?: unknown[]) => {
      try {
        return await client.query(text, values);
      } catch (error) {
        throw error instanceof CheckpointError || error instanceof ThreadBusyError ? error : explainPgError(error, this.server);
      }
    }) as Query;
    try {
      await query("BEGIN");
      const result = await work(query);
      await query("COMMIT");
      return result;
    } catch (error) {
      await client.query("ROLLBACK").catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  /** The queue's hook: the fence a write (or, `reading`, a journal read) of this run carries; undefined for a plain one. */
  protected fenceFor(_runId: string, _reading: boolean): PgWriteFence | undefined {
    return undefined;
  }

  /** The queue's hook: the error for a write whose fence (`token`) no longer holds (after telling the run's owner under it). */
  protected lost(runId: string, _token: number): Error {
    return queueOwned(runId);
  }

  // ---- CheckpointStore ----

  async save(runId: string, record: PersistedAgent): Promise<void> {
    checkRecordId(runId, record);
    const fence = this.fenceFor(runId, false);
    // A claimed run's save, its reads included, is tried again while its lease lasts (the queue's hook).
    await (fence ? this.held(runId, fence.token, () => this.saveOnce(runId, record, fence)) : this.saveOnce(runId, record, undefined));
  }

  /** A held run's last checkpoint with its output and the end of its lease (LastSave), retried like a hand-back. */
  protected saveLast(runId: string, record: PersistedAgent, fence: PgWriteFence, last: LastSave): Promise<unknown> {
    checkRecordId(runId, record);
    return this.held(runId, fence.token, () => this.saveOnce(runId, record, fence, last), false);
  }

  /** Resolves with the value of `last.also`'s expression, if any. */
  private async saveOnce(runId: string, record: PersistedAgent, fence: PgWriteFence | undefined, last?: LastSave): Promise<unknown> {
    for (let attempt = 0; ; attempt++) {
      const context = this.cache.peek(runId) ?? (await this.readContext(runId));
      const planned = await this.plan(record, context);
      const result = await this.writeSave(runId, record, planned, fence, last);
      if (result.written) {
        this.cache.set(contextAfter(context, planned.stored, result.id, keyframesAfter(planned.packed, result.id, context.keyframe)));
        if (this.options.keepCheckpoints !== undefined) await this.prune(runId);
        return result.also;
      }
      this.cache.delete(runId);
      if (fence && result.token !== fence.token) throw this.lost(runId, fence.token);
      if (!fence && result.token > 0) throw queueOwned(runId);
      // Another writer moved the run's head since this process read it: read it again.
      if (attempt >= 2) throw new CheckpointError(runId, `save: run ${runId} keeps being written by another writer meanwhile; one run id, one writer`);
    }
  }

  private async plan(record: PersistedAgent, context: RunContext): Promise<Planned> {
    const encoded = encodeValue(record, context);
    if (this.spareStreamIds.length < encoded.streams.length) this.spareStreamIds.push(...(await nextStreamIds(this.run, this.schema, encoded.streams.length + 8)));
    const ids = new Map(encoded.streams.map((s) => [s.id, this.spareStreamIds.shift()!]));
    const stored = withStoredIds(encoded, ids);
    return { stored, packed: packCheckpoint(stored.refs, stored.skeleton, context.keyframe), context };
  }

  /** The save in one statement: the run's row moves its head to the new checkpoint only if it still is where this writer read it (and carries the fence). */
  private async writeSave(runId: string, record: PersistedAgent, { stored, packed, context }: Planned, fence: PgWriteFence | undefined, last?: LastSave) {
    const runs = this.t("runs");
    // $1 run, $2-$7 streams and elements, $8 machine, $9 state, $10 iteration, $11 savedAt, $12 pending, $13 the head it was read at,
    // $14 keyframe, $15 body, $16 a keyframe's predecessor; then $17 status (a plain save) or $17 token, $18 inbox events delivered (a claimed run's);
    // a last save's $19 status, $20 output, $21 channel, $22 notification.
    const columns = `head = k.id, machine = $8::text, state = $9::text, iteration = $10::int, saved_at = $11::bigint, pending = $12::text, updated_at = ${NOW}`;
    const ends = last ? `, status = $19::text, output = $20::text, wake_at = NULL, owner = NULL, lease_until = NULL` : "";
    const ok = fence
      ? // The queue's status is the worker's to move (claim, park, finish), never a checkpoint's; a last save is the finish.
        `UPDATE ${runs} SET ${columns}${ends}
           FROM k WHERE run_id = $1::text AND head IS NOT DISTINCT FROM $13::bigint AND token = $17::bigint RETURNING run_key`
      : `INSERT INTO ${runs} AS r (run_id, agent, status, head, machine, state, iteration, saved_at, pending, created_at, updated_at)
           SELECT $1::text, $8::text, $17::text, k.id, $8::text, $9::text, $10::int, $11::bigint, $12::text, ${NOW}, ${NOW} FROM k
           ON CONFLICT (run_id) DO UPDATE SET head = excluded.head, machine = excluded.machine, state = excluded.state, iteration = excluded.iteration,
             saved_at = excluded.saved_at, pending = excluded.pending, status = excluded.status, updated_at = excluded.updated_at
           WHERE r.token = 0 AND r.head IS NOT DISTINCT FROM $13::bigint RETURNING run_key`;
    const applied = fence
      ? `, a AS (UPDATE ${this.t("inbox")} SET applied_at = ${NOW} WHERE run_id = $1::text AND id <= $18::bigint AND applied_at IS NULL AND EXISTS (SELECT 1 FROM ok) RETURNING id)`
      : "";
    const notified = last ? `, n AS (SELECT pg_notify($21::text, $22::text) FROM ok)` : "";
    // The run's journal drops the text of each tool result this save stores (the same text, by hash) for the message's place.
    const results = toolResultsAmong(stored.items);
    const at = last ? 23 : fence ? 19 : 18;
    const once =
      results.length === 0
        ? ""
        : `, j AS (UPDATE ${this.t("tool_journal")} t SET content = NULL, content_sha = NULL, item_stream = u.stream, item_seq = u.seq
             FROM unnest($${at}::text[], $${at + 1}::int[], $${at + 2}::int[], $${at + 3}::bytea[]) AS u(call_id, stream, seq, hash)
             WHERE EXISTS (SELECT 1 FROM ok) AND t.run_id = $1::text AND t.call_id = u.call_id AND t.content_sha = u.hash RETURNING 1)`;
    const also = last?.also?.(at + (results.length === 0 ? 0 : 4));
    const { rows } = await this.query<{ written: number; id: string; token: string | null; also?: unknown }>(
      `WITH k AS (SELECT nextval('${this.t("checkpoints_id_seq")}') AS id), ok AS (${ok}),
       ${insertStreamsSql(this.schema, "(SELECT run_key FROM ok)", "EXISTS (SELECT 1 FROM ok)")},
       c AS (INSERT INTO ${this.t("checkpoints")} (id, run_key, key_id, prev_key, body)
         SELECT k.id, ok.run_key, $14::bigint, $16::bigint, $15::bytea FROM k, ok)${applied}${notified}${once}${also?.ctes ?? ""}
       SELECT (SELECT count(*) FROM ok)::int AS written, (SELECT id FROM k) AS id, (SELECT token FROM ${runs} WHERE run_id = $1::text) AS token${last ? ", (SELECT count(*) FROM n)::int AS notified" : ""}${also ? `, ${also.select} AS also` : ""}`,
      [
        runId, ...streamParams(stored), record.machine, record.state, record.iteration, record.savedAt, JSON.stringify(last ? [] : pendingFromSnapshot(record.snapshot)),
        context.head ?? null, packed.keyId ?? null, packed.body, PgCheckpointRows.prevKeyOf(packed, context.keyframe?.id),
        ...(fence ? [fence.token, last ? Number.MAX_SAFE_INTEGER : fence.delivered] : [record.status]),
        ...(last ? [last.status, last.output(contextAfter(context, stored, context.head ?? 0, undefined)), last.channel, last.notify] : []),
        ...(results.length === 0 ? [] : [results.map((r) => storableKey(r.callId)), results.map((r) => r.stream), results.map((r) => r.seq), results.map((r) => r.sha256)]),
        ...(also?.values ?? []),
      ],
      last ? "finish: output" : "save: checkpoint",
    );
    const row = rows[0]!;
    return { written: row.written === 1, id: Number(row.id), token: Number(row.token ?? 0), also: row.also };
  }

  async load(runId: string, checkpointId?: string): Promise<PersistedAgent | undefined> {
    // No run is stored under an id PostgreSQL cannot hold (a NUL in a URL's path): there is nothing to load.
    if (!isStorableText(runId)) return undefined;
    const wanted = checkpointId === undefined ? null : checkpointIdOf(checkpointId);
    if (wanted === undefined) return undefined;
    const read = await this.checkpoints.read(this.run, runId, wanted);
    if (!read) return undefined;
    const { refs, skeleton } = this.split(read.row, read.keyframe);
    const cached = wanted === null ? this.cache.get(runId, read.head) : undefined;
    const streams = cached?.known ?? (await readStreams(this.run, this.schema, runId, refs).catch((error: unknown) => damaged(runId, read.row.id, `schema ${this.schema}`, error)));
    return recordFrom({ id: read.row.id, runId }, skeleton, refs, streams, `schema ${this.schema}`);
  }

  /** A checkpoint's text, refs and skeleton (a damaged one is a CheckpointError naming it). */
  private split(row: StoredCheckpoint, keyframe: (id: number) => KnownKeyframe | undefined) {
    const text = this.checkpoints.text(row, keyframe);
    try {
      return { text, ...splitText(text) };
    } catch (error) {
      return damaged(row.runId, row.id, `schema ${this.schema}`, error);
    }
  }

  async list(): Promise<CheckpointSummary[]> {
    const { rows } = await this.query<{ run_id: string; machine: string; state: string; status: string; iteration: number; saved_at: string }>(
      `SELECT run_id, machine, state, status, iteration, saved_at FROM ${this.t("runs")} WHERE head IS NOT NULL ORDER BY saved_at DESC, run_id`,
    );
    return rows.map((row) => ({
      runId: row.run_id,
      machine: row.machine,
      state: row.state,
      status: (row.status === "queued" ? "running" : row.status) as RunStatus,
      iteration: row.iteration,
      savedAt: Number(row.saved_at),
    }));
  }

  async delete(runId: string): Promise<boolean> {
    const deleted = await this.transaction(async (query) => {
      await this.handJournalToForks(query, runId);
      await query(`DELETE FROM ${this.t("tool_journal")} WHERE run_id = $1`, [runId]);
      await query(`DELETE FROM ${this.t("blobs")} WHERE run_id = $1`, [runId]);
      await query(`DELETE FROM ${this.t("run_events")} WHERE run_id = $1`, [runId]);
      const gone = await query<{ run_key: number }>(`DELETE FROM ${this.t("runs")} WHERE run_id = $1 RETURNING run_key`, [runId]);
      const runKey = gone.rows[0]?.run_key;
      if (runKey === undefined) return false;
      await query(`DELETE FROM ${this.t("checkpoints")} WHERE run_key = $1`, [runKey]);
      await this.dropUnusedStreams(query, runKey);
      return true;
    });
    this.cache.delete(runId);
    this.origins.clear();
    return deleted;
  }

  get keepFinishedMs(): number | undefined {
    return this.options.keepFinishedMs;
  }

  /** With `keepFinishedMs`: delete up to `limit` runs finished longer ago than that, one transaction each (finished-retention.ts). */
  async pruneFinished(limit = PRUNE_LIMIT): Promise<number> {
    if (this.options.keepFinishedMs === undefined) return 0;
    const due = await this.query<{ run_id: string }>(finishedRunsSql(this.t("runs"), `(${NOW} - $1::bigint)`, "$2::int"), [this.options.keepFinishedMs, limit], "pruneFinished");
    let pruned = 0;
    for (const { run_id } of due.rows) if (await this.delete(run_id)) pruned++;
    return pruned;
  }

  async history(runId: string): Promise<CheckpointEntry[]> {
    const entries = (await this.checkpoints.history(this.run, runId)).map(({ row, text }) => {
      try {
        return entryFromText(row, text);
      } catch (error) {
        return damaged(runId, row.id, `schema ${this.schema}`, error);
      }
    });
    const { rows } = await this.query<{ fork_checkpoint: string | null }>(`SELECT fork_checkpoint FROM ${this.t("runs")} WHERE run_id = $1`, [runId]);
    return withParents(entries, rows[0]?.fork_checkpoint != null ? Number(rows[0].fork_checkpoint) : undefined);
  }

  // ---- forks and threads ----

  async fork(request: ForkRequest): Promise<void> {
    const { runId, from, record, inherit } = request;
    checkRecordId(runId, record);
    const sourceId = checkpointIdOf(from.checkpointId);
    const next = await this.transaction(async (query) => {
      const { rows } = await query<{ agent: string }>(
        `SELECT r.agent FROM ${this.t("runs")} r JOIN ${this.t("checkpoints")} c ON c.run_key = r.run_key AND c.id = $2::bigint WHERE r.run_id = $1`,
        [from.runId, sourceId ?? 0],
      );
      if (!rows[0] || sourceId === undefined) throw new CheckpointError(from.runId, `fork: run ${from.runId} has no checkpoint ${from.checkpointId} (see store.history(runId))`);
      const created = await query(
        `INSERT INTO ${this.t("runs")} (run_id, agent, status, fork_of, fork_checkpoint, inherit, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, ${NOW}, ${NOW}) ON CONFLICT (run_id) DO NOTHING`,
        [runId, rows[0].agent, record.status, from.runId, sourceId, JSON.stringify(inherit)],
      );
      if (created.rowCount !== 1) throw new CheckpointError(runId, `fork: run ${runId} already exists; choose another runId for the fork`);
      const context = await this.contextFrom(query, runId, from.runId, sourceId, false);
      return this.writeWithClient(query, runId, record, context);
    });
    this.cache.set(next);
  }

  /** A checkpoint written inside a transaction (a fork's first, a migrated one); returns what the next save starts from. */
  protected async writeWithClient(query: Query, runId: string, record: PersistedAgent, context: RunContext): Promise<RunContext> {
    const encoded = encodeValue(record, context);
    const ids = await nextStreamIds(query, this.schema, encoded.streams.length);
    const stored = withStoredIds(encoded, new Map(encoded.streams.map((s, i) => [s.id, ids[i]!])));
    const packed = packCheckpoint(stored.refs, stored.skeleton, context.keyframe);
    const id = await insertCheckpoint(query, this.schema, runId, stored, packed, PgCheckpointRows.prevKeyOf(packed, context.keyframe?.id));
    await query(`UPDATE ${this.t("runs")} SET head = $2, machine = $3, state = $4, iteration = $5, saved_at = $6, pending = $7, updated_at = ${NOW} WHERE run_id = $1`, [
      runId, id, record.machine, record.state, record.iteration, record.savedAt, JSON.stringify(pendingFromSnapshot(record.snapshot)),
    ]);
    return contextAfter(context, stored, id, keyframesAfter(packed, id, context.keyframe));
  }

  openThreadRun(threadId: string, runId: string, machine: string): Promise<void> {
    return this.insertThreadRun(threadId, runId, { agent: machine, status: "running", input: {}, wake: false });
  }

  /** Register a new run of the thread (the queue submits its runs through this too). Refused while the thread's latest run has not ended. */
  protected async insertThreadRun(threadId: string, runId: string, run: { agent: string; status: "running" | "queued"; input: unknown; wake: boolean }): Promise<void> {
    const runs = this.t("runs");
    // At most one unfinished run per thread is a unique index: of two starts at once, one inserts.
    const inserted = await this.query(
      `INSERT INTO ${runs} (run_id, agent, input, status, wake_at, thread_id, thread_seq, seed, created_at, updated_at)
       SELECT $1, $2, $3, $4, CASE WHEN $5 THEN ${NOW} END, $6, coalesce(max(thread_seq), 0) + 1,
         (SELECT run_id FROM ${runs} WHERE thread_id = $6 ORDER BY thread_seq DESC LIMIT 1), ${NOW}, ${NOW}
       FROM ${runs} WHERE thread_id = $6 ON CONFLICT DO NOTHING`,
      [runId, run.agent, JSON.stringify(run.input), run.status, run.wake, threadId],
    );
    if (inserted.rowCount === 1) return;
    const { rows } = await this.query<{ run_id: string }>(`SELECT run_id FROM ${runs} WHERE thread_id = $1 AND status IN ('queued', 'running', 'awaitingApproval')`, [threadId]);
    if (rows[0]) throw new ThreadBusyError(threadId, rows[0].run_id);
    throw new CheckpointError(runId, `run ${runId} already exists; a thread's next run needs a new run id`);
  }

  async threadRuns(threadId: string): Promise<ThreadRun[]> {
    const { rows } = await this.query<{ run_id: string; status: ThreadRun["status"]; agent: string }>(`SELECT run_id, status, agent FROM ${this.t("runs")} WHERE thread_id = $1 ORDER BY thread_seq`, [threadId]);
    return rows.map((row) => ({ runId: row.run_id, status: row.status, agent: row.agent }));
  }

  lineage(runId: string): Promise<RunBranch[]> {
    return lineageOf(
      {
        forkOf: async (id) => {
          const { rows } = await this.query<{ fork_of: string | null; fork_checkpoint: string | null }>(`SELECT fork_of, fork_checkpoint FROM ${this.t("runs")} WHERE run_id = $1`, [id]);
          const row = rows[0];
          const from = row?.fork_of != null && row.fork_checkpoint != null ? { runId: row.fork_of, checkpointId: String(row.fork_checkpoint) } : undefined;
          return { exists: row !== undefined, ...(from ? { forkedFrom: from } : {}) };
        },
        forks: async (id) => (await this.query<{ run_id: string }>(`SELECT run_id FROM ${this.t("runs")} WHERE fork_of = $1 ORDER BY run_key`, [id])).rows.map((r) => r.run_id),
      },
      runId,
    );
  }

  async outputOf(runId: string): Promise<AgentOutput | undefined> {
    const { rows } = await this.query<{ status: ThreadRun["status"]; output: string | null }>(`SELECT status, output FROM ${this.t("runs")} WHERE run_id = $1`, [runId]);
    const row = rows[0];
    if (!row) return undefined;
    if (row.output !== null) return this.decodeOutput(runId, row.output);
    return isFinal(row.status) ? outputOfRecord(await this.load(runId)) : undefined;
  }

  /** The queue's stored output: encoded against the run's streams (outputs.ts). */
  protected async encodeOutput(runId: string, output: AgentOutput): Promise<string> {
    return encodeOutput(output, this.cache.peek(runId) ?? (await this.readContext(runId)));
  }

  protected async decodeOutput(runId: string, text: string): Promise<AgentOutput> {
    return (await this.decodeOutputs([{ runId, text }])).get(runId)!;
  }

  /**
   * Stored outputs (several when a wait is woken by a burst of finishes): the streams they name are
   * read in one pair of statements, not a pair per run. If that read fails for several, each output
   * is read on its own, so a damaged one is named as itself.
   */
  protected async decodeOutputs(rows: readonly { runId: string; text: string }[]): Promise<Map<string, AgentOutput>> {
    const where = `schema ${this.schema}`;
    let streams: Map<number, KnownStream> | undefined;
    try {
      const refs = rows.flatMap(({ text }) => outputRefs(text));
      streams = refs.length > 0 ? await readStreams(this.run, this.schema, undefined, refs) : new Map();
    } catch (error) {
      if (rows.length === 1) damaged(rows[0]!.runId, "output", where, error);
    }
    const outputs = new Map<string, AgentOutput>();
    for (const { runId, text } of rows) {
      if (streams === undefined) {
        outputs.set(runId, await this.decodeOutput(runId, text));
        continue;
      }
      try {
        outputs.set(runId, decodeOutput(text, streams));
      } catch (error) {
        damaged(runId, "output", where, error);
      }
    }
    return outputs;
  }

  async usage(runId?: string): Promise<LogUsage> {
    const mine = runId === undefined ? "" : `WHERE run_key = (SELECT run_key FROM ${this.t("runs")} WHERE run_id = $1)`;
    const journal = runId === undefined ? "" : "WHERE run_id = $1";
    const values = runId === undefined ? [] : [runId];
    const { rows } = await this.query<{ checkpoints: string; checkpoint_bytes: string; streams: string; items: string; item_chars: string; journal: string }>(
      `SELECT (SELECT count(*) FROM ${this.t("checkpoints")} ${mine}) AS checkpoints,
              (SELECT coalesce(sum(length(body)), 0) FROM ${this.t("checkpoints")} ${mine}) AS checkpoint_bytes,
              (SELECT count(*) FROM ${this.t("streams")} ${mine}) AS streams,
              (SELECT count(*) FROM ${this.t("items")} i WHERE i.stream_id IN (SELECT id FROM ${this.t("streams")} ${mine})) AS items,
              (SELECT coalesce(sum(length(body)), 0) FROM ${this.t("items")} i WHERE i.stream_id IN (SELECT id FROM ${this.t("streams")} ${mine})) AS item_chars,
              (SELECT count(*) FROM ${this.t("tool_journal")} ${journal}) AS journal`,
      values,
    );
    const row = rows[0]!;
    return {
      checkpoints: Number(row.checkpoints),
      checkpointBytes: Number(row.checkpoint_bytes),
      streams: Number(row.streams),
      items: Number(row.items),
      itemChars: Number(row.item_chars),
      journalEntries: Number(row.journal),
    };
  }

  // ---- BlobStore (not fenced: a blob is named by its content, so a late write of a lost run changes nothing) ----

  async putBlob(runId: string, sha256: string, blob: StoredBlob): Promise<void> {
    await this.query(`INSERT INTO ${this.t("blobs")} (run_id, sha256, media_type, data) VALUES ($1, $2, $3, $4) ON CONFLICT (run_id, sha256) DO NOTHING`, [
      runId,
      sha256,
      blob.mediaType,
      Buffer.from(blob.data, "base64"),
    ]);
  }

  async getBlob(runId: string, sha256: string): Promise<StoredBlob | undefined> {
    const { rows } = await this.query<{ media_type: string; data: Buffer }>(`SELECT media_type, data FROM ${this.t("blobs")} WHERE run_id = $1 AND sha256 = $2`, [runId, sha256]);
    const row = rows[0];
    return row ? { mediaType: row.media_type, data: row.data.toString("base64") } : undefined;
  }

  // ---- ToolJournal ----

  /*
   * A held run's journal writes lock its row FOR KEY SHARE until they commit: a claim (which moves
   * the token) locks it FOR UPDATE, so it waits for them or skips the run; the run's own checkpoint
   * saves and lease renewals (updates of no key column) go on beside them instead of waiting for
   * their commit, as they would behind FOR SHARE.
   */

  /** The atomic claim: true when this caller wrote the `started` entry; never overwrites. */
  async started(key: JournalKey, name: string): Promise<boolean> {
    const fence = this.fenceFor(key.runId, false);
    const insert = `INSERT INTO ${this.t("tool_journal")} (run_id, iteration, call_id, name, state, updated_at)`;
    if (!fence) {
      const result = await this.query(`${insert} VALUES ($1, $2, $3, $4, 'started', ${NOW}) ON CONFLICT DO NOTHING`, [key.runId, key.iteration, storableKey(key.callId), name]);
      return result.rowCount === 1;
    }
    const { won, token } = await this.held(key.runId, fence.token, async (attempt) => {
      const { rows } = await this.query<{ token: string | null; written: number; found: string | null }>(
        `WITH owner AS (SELECT token FROM ${this.t("runs")} WHERE run_id = $1 FOR KEY SHARE),
         ins AS (${insert} SELECT $1, $2, $3, $4, 'started', ${NOW} FROM owner WHERE owner.token = $5 ON CONFLICT DO NOTHING RETURNING 1)
         SELECT (SELECT token FROM owner) AS token, (SELECT count(*) FROM ins)::int AS written,
                (SELECT state FROM ${this.t("tool_journal")} WHERE run_id = $1 AND iteration = $2 AND call_id = $3) AS found`,
        [key.runId, key.iteration, storableKey(key.callId), name, fence.token],
      );
      const row = rows[0]!;
      // A retry that finds the entry this token's earlier try wrote (committed, but the reply was lost):
      // still this caller's claim. No one else writes under this token, and the executor claims only a call it found unjournaled.
      return { won: row.written === 1 || (attempt > 0 && row.found === "started"), token: Number(row.token) };
    });
    if (token !== fence.token) throw this.lost(key.runId, fence.token);
    return won;
  }

  async completed(key: JournalKey, outcome: ToolOutcome): Promise<void> {
    const fence = this.fenceFor(key.runId, false);
    const { packed, content, sha256 } = packOutcomeApart(outcome);
    const values = [key.runId, key.iteration, storableKey(key.callId), outcome.name, packed, content, sha256];
    const upsert = `INSERT INTO ${this.t("tool_journal")} AS journal (run_id, iteration, call_id, name, state, packed, content, content_sha, updated_at)`;
    const conflict = `ON CONFLICT (run_id, iteration, call_id) DO UPDATE SET name = excluded.name, state = 'completed', packed = excluded.packed, content = excluded.content, content_sha = excluded.content_sha, updated_at = excluded.updated_at WHERE journal.state = 'started'`;
    if (!fence) {
      await this.query(`${upsert} VALUES ($1, $2, $3, $4, 'completed', $5, $6, $7, ${NOW}) ${conflict}`, values);
      return;
    }
    const { rows } = await this.held(key.runId, fence.token, () =>
      this.query<{ token: string | null }>(
        `WITH owner AS (SELECT token FROM ${this.t("runs")} WHERE run_id = $1 FOR KEY SHARE),
         ins AS (${upsert} SELECT $1, $2, $3, $4, 'completed', $5, $6, $7, ${NOW} FROM owner WHERE owner.token = $8 ${conflict} RETURNING 1)
         SELECT (SELECT token FROM owner) AS token, (SELECT count(*) FROM ins)::int AS written`,
        [...values, fence.token],
        "completed: outcome",
      ),
    );
    if (Number(rows[0]!.token) !== fence.token) throw this.lost(key.runId, fence.token);
  }

  /** Fenced like the writes: a worker that lost the run must not replay the new owner's outcomes as its own. A fork asks its original for the calls it inherited. */
  async lookup(key: JournalKey): Promise<JournalEntry | undefined> {
    const fence = this.fenceFor(key.runId, true);
    return fence ? this.held(key.runId, fence.token, () => this.lookupOnce(key, fence)) : this.lookupOnce(key, undefined);
  }

  private async lookupOnce(key: JournalKey, fence: PgWriteFence | undefined): Promise<JournalEntry | undefined> {
    const select = `SELECT ${this.journalColumns("j")} FROM ${this.t("tool_journal")} j WHERE run_id = $1 AND iteration = $2 AND call_id = $3`;
    // The entry with the run's token (fenced) and what it was forked from (read once per run, for an entry it inherits).
    const { rows } = await this.query<JournalRow & OriginRow & { token: string | null; run: boolean; found: boolean }>(
      `SELECT r.run_id IS NOT NULL AS run, r.token, r.fork_of, r.inherit, e.name IS NOT NULL AS found, e.name, e.state, e.outcome, e.packed, e.content, e.element
       FROM (SELECT 1) x LEFT JOIN ${this.t("runs")} r ON r.run_id = $1 LEFT JOIN (${select}) e ON true`,
      [key.runId, key.iteration, storableKey(key.callId)],
    );
    const row = rows[0]!;
    if (fence && Number(row.token) !== fence.token) throw this.lost(key.runId, fence.token);
    if (row.run) this.rememberOrigin(key.runId, row);
    if (row.found) return this.entryOf(row, key);
    for (let at = inheritedKey(key, await this.originOf(key.runId)), depth = 0; at && depth < 1_000; depth++) {
      const row = (await this.query<JournalRow>(select, [at.runId, at.iteration, storableKey(at.callId)])).rows[0];
      if (row) return this.entryOf(row, at);
      at = inheritedKey(at, await this.originOf(at.runId));
    }
    return undefined;
  }

  /** A journal row's columns as `entryOf` reads them: the outcome's text or, once a save dropped it, the tool message it is read from. */
  private journalColumns(alias: string): string {
    return `${alias}.name, ${alias}.state, ${alias}.outcome, ${alias}.packed, ${alias}.content,
      (SELECT body FROM ${this.t("items")} WHERE stream_id = ${alias}.item_stream AND seq = ${alias}.item_seq) AS element`;
  }

  private entryOf(row: JournalRow, at: JournalKey): JournalEntry {
    return journalEntryOf({ ...row, outcome: row.packed !== null ? outcomeApart(row.packed, row.content, row.element) : row.outcome }, at, `schema ${this.schema}`);
  }

  async forget(runId: string): Promise<void> {
    await this.query(`DELETE FROM ${this.t("tool_journal")} WHERE run_id = $1`, [runId]);
  }

  // ---- the log ----

  private async originOf(runId: string, query: Query = this.run): Promise<ForkOrigin | undefined> {
    if (this.origins.has(runId)) return this.origins.get(runId) ?? undefined;
    const { rows } = await query<OriginRow>(`SELECT fork_of, inherit FROM ${this.t("runs")} WHERE run_id = $1`, [runId]);
    return rows[0] ? this.rememberOrigin(runId, rows[0]) : undefined;
  }

  /** What run `runId` was forked from, as its row says; remembered (it never changes but for a deleted origin, which clears it). */
  private rememberOrigin(runId: string, row: OriginRow): ForkOrigin | undefined {
    const inherit = readInheritance(row.inherit);
    const origin = row.fork_of && inherit ? { runId: row.fork_of, inherit } : undefined;
    this.origins.set(runId, origin ?? null);
    return origin;
  }

  /** What the run's next save builds on, read from the database (its head, or for a thread's next run the previous run's last checkpoint). */
  protected async readContext(runId: string, query: Query = this.run): Promise<RunContext> {
    const { rows } = await query<{ head: string | null; seed: string | null }>(`SELECT head, seed FROM ${this.t("runs")} WHERE run_id = $1`, [runId]);
    const row = rows[0];
    if (row?.head != null) return this.contextFrom(query, runId, runId, Number(row.head), true);
    // A thread's run before its first save: it builds on the last checkpoint of the thread's run before it.
    if (row?.seed != null) return this.contextFrom(query, runId, row.seed, null, false);
    return emptyContext(runId);
  }

  /** What run `runId`'s next save builds on: checkpoint `checkpointId` (its head when null) of run `source`, which is its own or not. */
  private async contextFrom(query: Query, runId: string, source: string, checkpointId: number | null, own: boolean): Promise<RunContext> {
    const read = await this.checkpoints.read(query, source, checkpointId);
    if (!read) return emptyContext(runId);
    const { text, refs, skeleton } = this.split(read.row, read.keyframe);
    const base = { runId, head: own ? read.row.id : undefined, known: await readStreams(query, this.schema, runId, refs), paths: pathsOf(skeleton, refs) };
    if (!own) return base;
    try {
      return { ...base, keyframe: keyframesAt(read.row, text, read.keyframe) };
    } catch (error) {
      return damaged(runId, read.row.id, `schema ${this.schema}`, error);
    }
  }

  /** With `keepCheckpoints`: drop the run's older checkpoints, except those a fork starts from and the keyframes the kept ones need. */
  private async prune(runId: string): Promise<void> {
    const key = `(SELECT run_key FROM ${this.t("runs")} WHERE run_id = $1::text)`;
    await this.query(`${pruneKeepingSql(this.t("checkpoints"), this.t("runs"), { key, id: "$1::text" }, "$2::int")} DELETE FROM ${this.t("checkpoints")} WHERE run_key = ${key} AND id NOT IN (SELECT id FROM needed)`, [
      runId,
      this.options.keepCheckpoints,
    ]);
  }

  /** A deleted run's journal stays visible to its forks: they get their own copy of what they inherited. */
  private async handJournalToForks(query: Query, runId: string): Promise<void> {
    const forks = await query<{ run_id: string }>(`SELECT run_id FROM ${this.t("runs")} WHERE fork_of = $1`, [runId]);
    const entries = async (id: string): Promise<KeyedEntry[]> => {
      const { rows } = await query<JournalRow & { iteration: number; call_id: string }>(
        `SELECT j.iteration, j.call_id, ${this.journalColumns("j")} FROM ${this.t("tool_journal")} j WHERE j.run_id = $1`,
        [id],
      );
      return rows.map((row) => {
        const key = { runId: id, iteration: row.iteration, callId: row.call_id };
        return { key, entry: this.entryOf(row, key) };
      });
    };
    for (const { run_id: fork } of forks.rows) {
      const chain: { runId: string; origin?: ForkOrigin; entries: KeyedEntry[] }[] = [];
      for (let at: string | undefined = fork; at !== undefined && chain.length < 1_000; ) {
        this.origins.delete(at);
        const origin = await this.originOf(at, query);
        chain.push({ runId: at, ...(origin ? { origin } : {}), entries: await entries(at) });
        at = origin?.runId;
      }
      for (const { key, entry } of effectiveEntries(chain)) {
        // The fork's own copy keeps the content: the message it was read from goes with the deleted run.
        const apart = entry.state === "completed" ? packOutcomeApart(entry.outcome) : undefined;
        await query(
          `INSERT INTO ${this.t("tool_journal")} (run_id, iteration, call_id, name, state, packed, content, content_sha, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, ${NOW}) ON CONFLICT DO NOTHING`,
          [key.runId, key.iteration, key.callId, entry.state === "completed" ? entry.outcome.name : entry.name, entry.state, apart?.packed ?? null, apart?.content ?? null, apart?.sha256 ?? null],
        );
      }
      // It keeps naming the run it was forked from (history, lineage); it inherits nothing more.
      await query(`UPDATE ${this.t("runs")} SET inherit = NULL WHERE run_id = $1`, [fork]);
    }
  }

  /** The deleted run's streams, unless a kept stream builds on them (then they stay until that one goes); then the bases they freed. */
  private async dropUnusedStreams(query: Query, runKey: number): Promise<void> {
    const streams = this.t("streams");
    let candidates = (await query<{ id: number }>(`SELECT id FROM ${streams} WHERE run_key = $1`, [runKey])).rows.map((r) => r.id);
    while (candidates.length > 0) {
      const { rows } = await query<{ id: number; base_id: number | null }>(
        `DELETE FROM ${streams} s WHERE s.id = ANY($1::int[])
           AND NOT EXISTS (SELECT 1 FROM ${this.t("runs")} r WHERE r.run_key = s.run_key)
           AND NOT EXISTS (SELECT 1 FROM ${streams} b WHERE b.base_id = s.id)
         RETURNING s.id, s.base_id`,
        [candidates],
      );
      if (rows.length > 0) await query(`DELETE FROM ${this.t("items")} WHERE stream_id = ANY($1::int[])`, [rows.map((r) => r.id)]);
      candidates = rows.flatMap((r) => (r.base_id === null ? [] : [r.base_id]));
    }
  }
}
