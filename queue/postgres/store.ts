import pg from "pg";
import type { ToolOutcome } from "../../actors/tool-executor.js";
import type { JournalEntry, JournalKey, ToolJournal } from "../../actors/tool-journal.js";
import { checkRecordId, journalEntryOf, type CheckpointStore, type CheckpointSummary } from "../../machines/persistence/checkpoints/store.js";
import type { AgentOutput } from "../../machines/contract/context.js";
import { readPersisted, type PersistedAgent, type RunStatus } from "../../machines/persistence/persistence.js";
import { RunQueueError } from "../errors.js";
import { Fences } from "../fences.js";
import type { BlobStore, StoredBlob } from "../../machines/persistence/blobs.js";
import { queueOwned, type QueueSignal, type RunStore } from "../run-store.js";
import { checkAgentKnown, checkCommand, checkListOptions, checkRunId, checkSubmit, sendProblem } from "../requests.js";
import {
  pendingFromSnapshot,
  type ClaimedRun,
  type InboxEvent,
  type ListOptions,
  type QueueStatus,
  type RunCommand,
  type RunInput,
  type RunStatusInfo,
  type RunSummary,
  type SubmitRequest,
  dedupeKeyOf,
} from "../schemas.js";
import { isStorableText, storableKey } from "../storable.js";
import { Waiters } from "../wait.js";
import type { RunEventInput, StoredRunEvent } from "../run-events.js";
import { retryWithin } from "../retry.js";
import { explainPgError, isTransientPgFault, pgFaultOf, type ServerNaming } from "./errors.js";
import { NotificationListener } from "./listener.js";
import { clientConfig, ownPool } from "./pool.js";
import { claimStatement, NOW } from "./statements.js";
import { migrate } from "./migrations.js";
import { ConnectOptionsSchema, serverNaming, type PostgresRunStoreOptions, type ResolvedOptions } from "./options.js";

interface RunRow {
  run_id: string;
  agent: string;
  status: QueueStatus;
  owner: string | null;
  lease_until: string | null;
  /** JSON text. */
  pending: string;
  updated_at: string;
  created_at: string;
  state: string | null;
  iteration: number;
  now: string;
}

/** How long the LISTEN connection stays closed after the server refused this store a connection. */
const LISTEN_YIELD_MS = 30_000;

/**
 * The run queue on PostgreSQL: runs, their inboxes, checkpoints and tool journal in one schema.
 * Claims use `FOR UPDATE SKIP LOCKED`; every write of a claimed run is conditional on its fencing
 * token, in the same statement; `LISTEN/NOTIFY` wakes workers and waiters, polling backs it up.
 * Also a `CheckpointStore` and `ToolJournal` for `runAgent({ checkpoints })` and `createReactMachine({ journal })`.
 */
export class PostgresRunStore implements RunStore, CheckpointStore, ToolJournal, BlobStore {
  private readonly fences = new Fences();
  private readonly listener: NotificationListener | undefined;
  private readonly channel: string;
  private closed = false;

  private constructor(
    private readonly pool: pg.Pool,
    private readonly ownsPool: boolean,
    private readonly options: ResolvedOptions,
    private readonly server: ServerNaming,
    /** The server refused a connection: the pool stops growing, the LISTEN connection steps aside for a while. */
    private readonly refused: () => void,
  ) {
    this.channel = `jianmu_runs_${options.schema}`;
    this.listener = options.listen ? new NotificationListener(clientConfig(options), this.channel) : undefined;
  }

  /** The schema the tables live in. */
  get schema(): string {
    return this.options.schema;
  }

  /**
   * Connect, then create or migrate the tables (versioned, idempotent, one process at a time under an
   * advisory lock). Rejects with a `RunQueueError` naming the fix, having written nothing, when the
   * options are wrong, the server is unreachable or the role lacks rights.
   */
  static async connect(options: PostgresRunStoreOptions): Promise<PostgresRunStore> {
    const parsed = ConnectOptionsSchema.safeParse(options);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      const field = issue.path.map(String).join(".") || "(options)";
      throw new RunQueueError("invalid_input", `PostgresRunStore.connect: options.${field} ${issue.message}`);
    }
    const resolved = parsed.data;
    const server = serverNaming(resolved);
    const own = resolved.pool === undefined ? ownPool(resolved) : undefined;
    const ownsPool = own !== undefined;
    const pool = own?.pool ?? resolved.pool!;
    let client: pg.PoolClient | undefined;
    try {
      client = await pool.connect();
      await migrate(client, resolved.schema);
    } catch (error) {
      client?.release(true);
      client = undefined;
      if (ownsPool) await pool.end().catch(() => undefined);
      throw explainPgError(error, server);
    } finally {
      client?.release();
    }
    return new PostgresRunStore(pool, ownsPool, resolved, server, () => own?.refused());
  }

  /** One statement; a failure becomes a RunQueueError naming `where` (the call and the value that failed). */
  private async query<R extends pg.QueryResultRow>(text: string, values: unknown[] = [], where?: string): Promise<pg.QueryResult<R>> {
    if (this.closed) throw new RunQueueError("closed", "this PostgresRunStore is closed; connect a new one");
    try {
      return await this.pool.query<R>(text, values);
    } catch (error) {
      if (pgFaultOf(error) === "tooManyClients") {
        this.refused();
        this.listener?.yieldConnection(LISTEN_YIELD_MS);
      }
      throw explainPgError(error, this.server, where);
    }
  }

  /**
   * A statement for a run this process holds, tried again with backoff while the database is away
   * and the lease lasts (queue/retry.ts). Past the lease, a statement of the run's actor (checkpoint,
   * journal, inbox) gives the run up: the worker stops it, and it resumes elsewhere from its
   * checkpoint. A hand-back (`giveUp: false`) just fails: the worker has let the actor go already.
   */
  private async held<T>(runId: string, token: number, statement: (attempt: number) => Promise<T>, giveUp = true): Promise<T> {
    try {
      return await retryWithin(statement, { transient: isTransientPgFault, deadline: () => this.fences.leaseEnd(runId, token) });
    } catch (error) {
      if (giveUp && isTransientPgFault(error)) throw this.fences.giveUp(runId, error);
      throw error;
    }
  }

  private t(name: string): string {
    return `${this.options.schema}.${name}`;
  }

  // ---- the public half ---------------------------------------------------------------------------

  async submit(request: SubmitRequest): Promise<string> {
    const { agent, input, runId } = checkSubmit(request);
    await checkAgentKnown(agent, this.options.unknownAgents, async () => (await this.query<{ name: string }>(`SELECT name FROM ${this.t("agents")} ORDER BY name`)).rows.map((r) => r.name));
    const { rows } = await this.query<{ inserted: number; agent: string }>(
      `WITH ins AS (
         INSERT INTO ${this.t("runs")} (run_id, agent, input, status, wake_at, created_at, updated_at)
         VALUES ($1, $2, $3, 'queued', ${NOW}, ${NOW}, ${NOW}) ON CONFLICT (run_id) DO NOTHING RETURNING run_id),
       n AS (SELECT pg_notify($4, 'runnable') FROM ins)
       SELECT (SELECT count(*) FROM ins)::int AS inserted, (SELECT count(*) FROM n)::int AS notified,
              (SELECT agent FROM ${this.t("runs")} WHERE run_id = $1) AS agent`,
      [runId, agent, JSON.stringify(input), this.channel],
      "submit: input",
    );
    const row = rows[0]!;
    if (row.inserted === 0 && row.agent !== null && row.agent !== agent) {
      throw new RunQueueError("invalid_input", `submit: run ${runId} already exists for agent "${row.agent}", not "${agent}"; submit under another runId`);
    }
    return runId;
  }

  async send(runId: string, command: RunCommand): Promise<boolean> {
    const id = checkRunId(runId, "send");
    const checked = checkCommand(command);
    const found = await this.query<{ status: QueueStatus; pending: string }>(`SELECT status, pending FROM ${this.t("runs")} WHERE run_id = $1`, [id]);
    const run = found.rows[0];
    const problem = sendProblem(id, checked, run && { status: run.status, pending: JSON.parse(run.pending) as RunStatusInfo["pendingApprovals"] });
    if (problem) throw problem;
    // The run is due now (wake_at): claims look at wake_at alone, never at the inbox.
    const { rows } = await this.query<{ inserted: number }>(
      `WITH ins AS (
         INSERT INTO ${this.t("inbox")} (run_id, dedupe_key, command, created_at) VALUES ($1, $2, $3, ${NOW})
         ON CONFLICT (run_id, dedupe_key) DO NOTHING RETURNING id),
       due AS (UPDATE ${this.t("runs")} SET wake_at = ${NOW} WHERE run_id = $1 AND status IN ('queued', 'running', 'awaitingApproval') AND EXISTS (SELECT 1 FROM ins) RETURNING 1),
       n AS (SELECT pg_notify($4, 'runnable') FROM ins)
       SELECT (SELECT count(*) FROM ins)::int AS inserted, (SELECT count(*) FROM due)::int AS due, (SELECT count(*) FROM n)::int AS notified`,
      [id, storableKey(dedupeKeyOf(checked)), JSON.stringify(checked), this.channel],
      "send: command",
    );
    return rows[0]!.inserted === 1;
  }

  /** Shared by every wait of this store: one LISTEN, one statement per wake-up however many wait (queue/wait.ts). */
  private readonly waiters = new Waiters({
    outputOf: async (runId) => {
      const { rows } = await this.query<{ output: string | null }>(`SELECT output FROM ${this.t("runs")} WHERE run_id = $1`, [runId]);
      if (rows.length === 0) throw new RunQueueError("unknown_run", `wait: there is no run ${JSON.stringify(runId)} in schema ${this.schema}; check the id with store.list({})`);
      return rows[0]!.output;
    },
    outputs: async (runIds) => {
      const { rows } = await this.query<{ run_id: string; output: string }>(`SELECT run_id, output FROM ${this.t("runs")} WHERE run_id = ANY($1::text[]) AND output IS NOT NULL`, [runIds]);
      return new Map(rows.map((row) => [row.run_id, row.output]));
    },
    subscribe: (listener) => this.subscribe(listener),
    listeningSince: () => this.listener?.since,
    pollMs: () => this.options.pollMs,
  });

  async wait(runId: string, options: { signal?: AbortSignal } = {}): Promise<AgentOutput> {
    return this.waiters.wait(checkRunId(runId, "wait"), options.signal);
  }

  async status(runId: string): Promise<RunStatusInfo> {
    const id = checkRunId(runId, "status");
    const { rows } = await this.query<RunRow>(`SELECT *, ${NOW} AS now FROM ${this.t("runs")} WHERE run_id = $1`, [id]);
    const row = rows[0];
    if (!row) throw new RunQueueError("unknown_run", `status: there is no run ${JSON.stringify(id)} in schema ${this.schema}; check the id with store.list({})`);
    return statusOf(row);
  }

  list(): Promise<CheckpointSummary[]>;
  list(options: ListOptions): Promise<RunSummary[]>;
  async list(options?: ListOptions): Promise<CheckpointSummary[] | RunSummary[]> {
    if (options === undefined) {
      const { rows } = await this.query<{ run_id: string; machine: string; state: string; status: QueueStatus; iteration: number; saved_at: string }>(
        `SELECT run_id, machine, state, status, iteration, saved_at FROM ${this.t("runs")} WHERE checkpoint IS NOT NULL ORDER BY saved_at DESC, run_id`,
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
    const { status, agent, limit } = checkListOptions(options);
    const { rows } = await this.query<RunRow>(
      `SELECT *, ${NOW} AS now FROM ${this.t("runs")}
       WHERE ($1::text IS NULL OR status = $1) AND ($2::text IS NULL OR agent = $2)
       ORDER BY created_at DESC, run_id LIMIT $3`,
      [status ?? null, agent ?? null, limit],
    );
    return rows.map((row) => ({ ...statusOf(row), ...(row.state ? { state: row.state } : {}), iteration: row.iteration, createdAt: Number(row.created_at) }));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.listener?.close();
    if (this.ownsPool) await this.pool.end().catch(() => undefined);
  }

  // ---- CheckpointStore -----------------------------------------------------------------------------

  async save(runId: string, record: PersistedAgent): Promise<void> {
    checkRecordId(runId, record);
    const body = JSON.stringify(record);
    const pending = JSON.stringify(pendingFromSnapshot(record.snapshot));
    const fence = this.fences.forWrite(runId);
    if (fence) {
      // The queue's status is the worker's to move (claim: running, park, finish), never a checkpoint's:
      // a run is reported parked once it is released, and final only with its output.
      const { rows } = await this.held(runId, fence.token, () =>
        this.query<{ updated: number }>(
          `WITH u AS (
             UPDATE ${this.t("runs")} SET checkpoint = $3, machine = $4, state = $5, iteration = $6, saved_at = $7, pending = $8, updated_at = ${NOW}
             WHERE run_id = $1 AND token = $2 RETURNING run_id),
           a AS (UPDATE ${this.t("inbox")} SET applied_at = ${NOW} WHERE run_id = $1 AND id <= $9 AND applied_at IS NULL AND EXISTS (SELECT 1 FROM u) RETURNING id)
           SELECT (SELECT count(*) FROM u)::int AS updated`,
          [runId, fence.token, body, record.machine, record.state, record.iteration, record.savedAt, pending, fence.delivered],
          "save: checkpoint",
        ),
      );
      if (rows[0]!.updated !== 1) throw this.fences.lost(runId);
      return;
    }
    const result = await this.query(
      `INSERT INTO ${this.t("runs")} (run_id, agent, status, machine, checkpoint, state, iteration, saved_at, pending, created_at, updated_at)
       VALUES ($1, $2, $3, $2, $4, $5, $6, $7, $8, ${NOW}, ${NOW})
       ON CONFLICT (run_id) DO UPDATE SET status = excluded.status, machine = excluded.machine, checkpoint = excluded.checkpoint, state = excluded.state,
         iteration = excluded.iteration, saved_at = excluded.saved_at, pending = excluded.pending, updated_at = excluded.updated_at
       WHERE ${this.t("runs")}.token = 0`,
      [runId, record.machine, record.status, body, record.state, record.iteration, record.savedAt, pending],
    );
    if (result.rowCount !== 1) throw queueOwned(runId);
  }

  async load(runId: string): Promise<PersistedAgent | undefined> {
    // No run is stored under an id PostgreSQL cannot hold (a NUL in a URL's path): there is nothing to load.
    if (!isStorableText(runId)) return undefined;
    const { rows } = await this.query<{ checkpoint: string | null }>(`SELECT checkpoint FROM ${this.t("runs")} WHERE run_id = $1`, [runId]);
    const text = rows[0]?.checkpoint;
    return text ? readPersisted(text) : undefined;
  }

  async delete(runId: string): Promise<boolean> {
    const { rows } = await this.query<{ deleted: number }>(
      `WITH j AS (DELETE FROM ${this.t("tool_journal")} WHERE run_id = $1 RETURNING 1),
            b AS (DELETE FROM ${this.t("blobs")} WHERE run_id = $1 RETURNING 1),
            r AS (DELETE FROM ${this.t("runs")} WHERE run_id = $1 RETURNING 1)
       SELECT (SELECT count(*) FROM r)::int AS deleted`,
      [runId],
    );
    return rows[0]!.deleted > 0;
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

  // ---- ToolJournal -------------------------------------------------------------------------------

  /** The atomic claim: true when this caller wrote the `started` entry; never overwrites. */
  async started(key: JournalKey, name: string): Promise<boolean> {
    const fence = this.fences.forWrite(key.runId);
    if (!fence) {
      const result = await this.query(
        `INSERT INTO ${this.t("tool_journal")} (run_id, iteration, call_id, name, state, updated_at) VALUES ($1, $2, $3, $4, 'started', ${NOW})
         ON CONFLICT DO NOTHING`,
        [key.runId, key.iteration, storableKey(key.callId), name],
      );
      return result.rowCount === 1;
    }
    const { won, token } = await this.held(key.runId, fence.token, async (attempt) => {
      const { rows } = await this.query<{ token: string | null; written: number; found: string | null }>(
        `WITH owner AS (SELECT token FROM ${this.t("runs")} WHERE run_id = $1 FOR SHARE),
         ins AS (
           INSERT INTO ${this.t("tool_journal")} (run_id, iteration, call_id, name, state, updated_at)
           SELECT $1, $2, $3, $4, 'started', ${NOW} FROM owner WHERE owner.token = $5
           ON CONFLICT DO NOTHING RETURNING 1)
         SELECT (SELECT token FROM owner) AS token, (SELECT count(*) FROM ins)::int AS written,
                (SELECT state FROM ${this.t("tool_journal")} WHERE run_id = $1 AND iteration = $2 AND call_id = $3) AS found`,
        [key.runId, key.iteration, storableKey(key.callId), name, fence.token],
      );
      const row = rows[0]!;
      // A retry that finds the entry this token's earlier try wrote (committed, but the reply was lost):
      // still this caller's claim. No one else writes under this token, and the executor claims only a call it found unjournaled.
      return { won: row.written === 1 || (attempt > 0 && row.found === "started"), token: Number(row.token) };
    });
    if (token !== fence.token) throw this.fences.lost(key.runId);
    return won;
  }

  async completed(key: JournalKey, outcome: ToolOutcome): Promise<void> {
    const fence = this.fences.forWrite(key.runId);
    const values = [key.runId, key.iteration, storableKey(key.callId), outcome.name, JSON.stringify(outcome)];
    const upsert = `INSERT INTO ${this.t("tool_journal")} AS journal (run_id, iteration, call_id, name, state, outcome, updated_at)`;
    const conflict = `ON CONFLICT (run_id, iteration, call_id) DO UPDATE SET name = excluded.name, state = 'completed', outcome = excluded.outcome, updated_at = excluded.updated_at WHERE journal.state = 'started'`;
    if (!fence) {
      await this.query(`${upsert} VALUES ($1, $2, $3, $4, 'completed', $5, ${NOW}) ${conflict}`, values);
      return;
    }
    const { rows } = await this.held(key.runId, fence.token, () =>
      this.query<{ token: string | null }>(
        `WITH owner AS (SELECT token FROM ${this.t("runs")} WHERE run_id = $1 FOR SHARE),
         ins AS (${upsert} SELECT $1, $2, $3, $4, 'completed', $5, ${NOW} FROM owner WHERE owner.token = $6 ${conflict} RETURNING 1)
         SELECT (SELECT token FROM owner) AS token, (SELECT count(*) FROM ins)::int AS written`,
        [...values, fence.token],
        "completed: outcome",
      ),
    );
    if (Number(rows[0]!.token) !== fence.token) throw this.fences.lost(key.runId);
  }

  /** Fenced like the writes: a worker that lost the run must not replay the new owner's outcomes as its own. */
  async lookup(key: JournalKey): Promise<JournalEntry | undefined> {
    const fence = this.fences.get(key.runId);
    const select = `SELECT name, state, outcome FROM ${this.t("tool_journal")} WHERE run_id = $1 AND iteration = $2 AND call_id = $3`;
    if (!fence) {
      const { rows } = await this.query<{ name: string; state: "started" | "completed"; outcome: unknown }>(select, [key.runId, key.iteration, storableKey(key.callId)]);
      return rows[0] ? journalEntryOf(rows[0], key, `schema ${this.schema}`) : undefined;
    }
    const { rows } = await this.held(key.runId, fence.token, () =>
      this.query<{ token: string | null; entry: { name: string; state: "started" | "completed"; outcome: unknown } | null }>(
        `SELECT (SELECT token FROM ${this.t("runs")} WHERE run_id = $1) AS token, (SELECT row_to_json(e) FROM (${select}) e) AS entry`,
        [key.runId, key.iteration, storableKey(key.callId)],
      ),
    );
    if (Number(rows[0]!.token) !== fence.token) throw this.fences.lost(key.runId);
    const row = rows[0]!.entry;
    if (!row) return undefined;
    return journalEntryOf(row, key, `schema ${this.schema}`);
  }

  async forget(runId: string): Promise<void> {
    await this.query(`DELETE FROM ${this.t("tool_journal")} WHERE run_id = $1`, [runId]);
  }

  // ---- the worker's half ---------------------------------------------------------------------------

  async registerAgents(agents: readonly string[]): Promise<void> {
    await this.query(
      `INSERT INTO ${this.t("agents")} (name, last_seen) SELECT unnest($1::text[]), ${NOW} ON CONFLICT (name) DO UPDATE SET last_seen = excluded.last_seen`,
      [agents],
    );
  }

  async claim(request: { owner: string; agents: readonly string[]; limit: number; leaseMs: number }): Promise<ClaimedRun[]> {
    const sent = Date.now();
    const { rows } = await this.query<{ run_id: string; agent: string; token: string; input: string; checkpoint: string | null }>(claimStatement(this.schema), [
      request.agents,
      request.limit,
      request.owner,
      request.leaseMs,
    ]);
    for (const row of rows) this.fences.leased(row.run_id, Number(row.token), sent + request.leaseMs);
    return rows.map((row) => ({
      runId: row.run_id,
      agent: row.agent,
      token: Number(row.token),
      input: JSON.parse(row.input) as RunInput,
      ...(row.checkpoint !== null ? { checkpoint: row.checkpoint } : {}),
    }));
  }

  fence(runId: string, token: number, onLost: (error: Error) => void): void {
    this.fences.fence(runId, token, onLost);
  }

  unfence(runId: string): void {
    this.fences.unfence(runId);
  }

  delivered(runId: string, throughId: number): void {
    this.fences.delivered(runId, throughId);
  }

  async renew(runId: string, token: number, leaseMs: number): Promise<boolean> {
    const sent = Date.now();
    const result = await this.query(`UPDATE ${this.t("runs")} SET lease_until = ${NOW} + $3 WHERE run_id = $1 AND token = $2 AND owner IS NOT NULL`, [runId, token, leaseMs]);
    if (result.rowCount === 1) this.fences.leased(runId, token, sent + leaseMs);
    return result.rowCount === 1;
  }

  async inbox(runId: string, afterId: number): Promise<InboxEvent[]> {
    const read = () =>
      this.query<{ id: string; command: string }>(`SELECT id, command FROM ${this.t("inbox")} WHERE run_id = $1 AND id > $2 AND applied_at IS NULL ORDER BY id`, [runId, afterId]);
    const fence = this.fences.get(runId);
    const { rows } = fence ? await this.held(runId, fence.token, read) : await read();
    return rows.map((row) => ({ id: Number(row.id), command: JSON.parse(row.command) as RunCommand }));
  }

  /** Ends the lease and marks delivered events applied, in one statement conditional on the token. */
  private async handBack(runId: string, token: number, set: string, values: unknown[], how: { notify?: string; applyAll?: boolean; where: string }): Promise<boolean> {
    const { notify, applyAll = false, where } = how;
    const delivered = applyAll ? Number.MAX_SAFE_INTEGER : this.fences.deliveredOf(runId);
    // Retried inside the lease; a try after one that committed (its reply lost) finds the same token and writes the same values.
    const { rows } = await this.held(
      runId,
      token,
      () =>
        this.query<{ updated: number }>(
          `WITH u AS (UPDATE ${this.t("runs")} SET owner = NULL, lease_until = NULL, updated_at = ${NOW}, ${set} WHERE run_id = $1 AND token = $2 RETURNING run_id),
           a AS (UPDATE ${this.t("inbox")} SET applied_at = ${NOW} WHERE run_id = $1 AND id <= $3 AND applied_at IS NULL AND EXISTS (SELECT 1 FROM u) RETURNING id),
           n AS (SELECT pg_notify($4, $5) FROM u WHERE $5::text IS NOT NULL)
           SELECT (SELECT count(*) FROM u)::int AS updated, (SELECT count(*) FROM n)::int AS notified`,
          [runId, token, delivered, this.channel, notify ?? null, ...values],
          where,
        ),
      false,
    );
    if (rows[0]!.updated === 1) this.fences.handedBack(runId, token);
    return rows[0]!.updated === 1;
  }

  park(runId: string, token: number, wakeAt: number | undefined): Promise<boolean> {
    // An event that arrived after the last delivered one keeps the run due (send() set wake_at before this).
    const due = `EXISTS (SELECT 1 FROM ${this.t("inbox")} i WHERE i.run_id = $1 AND i.applied_at IS NULL AND i.id > $3)`;
    return this.handBack(runId, token, `status = 'awaitingApproval', wake_at = CASE WHEN ${due} THEN ${NOW} ELSE $6::bigint END`, [wakeAt ?? null], { where: "park" });
  }

  finish(runId: string, token: number, output: AgentOutput): Promise<boolean> {
    return this.handBack(runId, token, `status = $6, output = $7, wake_at = NULL, pending = '[]'`, [output.status, JSON.stringify(output)], {
      notify: `finished:${runId}`,
      applyAll: true,
      where: "finish: output",
    });
  }

  release(runId: string, token: number): Promise<boolean> {
    return this.handBack(runId, token, `wake_at = ${NOW}`, [], { notify: "runnable", where: "release" });
  }

  async appendRunEvents(runId: string, token: number, events: readonly RunEventInput[]): Promise<boolean> {
    // Numbered after the run's last in the same statement; a worker that lost the run writes nothing.
    const { rows } = await this.query<{ held: number }>(
      `WITH held AS (SELECT run_id FROM ${this.t("runs")} WHERE run_id = $1 AND token = $2),
       base AS (SELECT coalesce(max(seq), 0) AS n FROM ${this.t("run_events")} WHERE run_id = $1),
       ins AS (INSERT INTO ${this.t("run_events")} (run_id, seq, type, data)
         SELECT $1, base.n + e.ord, e.type, e.data FROM held, base, unnest($3::text[], $4::text[]) WITH ORDINALITY AS e(type, data, ord) RETURNING 1),
       n AS (SELECT pg_notify($5, 'events:' || $1) FROM held WHERE EXISTS (SELECT 1 FROM ins))
       SELECT (SELECT count(*) FROM held)::int AS held, (SELECT count(*) FROM n)::int AS notified`,
      [runId, token, events.map((event) => event.type), events.map((event) => JSON.stringify(event.data)), this.channel],
      "appendRunEvents",
    );
    return rows[0]!.held === 1;
  }

  async runEventsAfter(runId: string, afterSeq: number, limit: number): Promise<StoredRunEvent[]> {
    const { rows } = await this.query<{ seq: number; type: string; data: string }>(
      `SELECT seq, type, data FROM ${this.t("run_events")} WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
      [runId, afterSeq, limit],
      "runEventsAfter",
    );
    return rows.map((row) => ({ seq: row.seq, type: row.type, data: JSON.parse(row.data) as unknown }));
  }

  async pruneRunEvents(finishedBefore: number): Promise<number> {
    const { rows } = await this.query<{ runs: number }>(
      `WITH d AS (DELETE FROM ${this.t("run_events")} e USING ${this.t("runs")} r
         WHERE e.run_id = r.run_id AND r.status IN ('succeeded', 'failed') AND r.updated_at < $1 RETURNING e.run_id)
       SELECT count(DISTINCT run_id)::int AS runs FROM d`,
      [finishedBefore],
      "pruneRunEvents",
    );
    return rows[0]!.runs;
  }

  subscribe(listener: (signal: QueueSignal) => void): () => void {
    return this.listener ? this.listener.subscribe(listener) : () => undefined;
  }
}


function statusOf(row: RunRow): RunStatusInfo {
  const leased = row.owner !== null && row.lease_until !== null && Number(row.lease_until) > Number(row.now);
  return {
    runId: row.run_id,
    agent: row.agent,
    status: row.status,
    pendingApprovals: JSON.parse(row.pending) as RunStatusInfo["pendingApprovals"],
    ...(leased ? { owner: row.owner! } : {}),
    updatedAt: Number(row.updated_at),
  };
}

