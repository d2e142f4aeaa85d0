import pg from "pg";
import type { CheckpointSummary } from "../../machines/persistence/checkpoints/store.js";
import type { AgentOutput } from "../../machines/contract/context.js";
import { emptyContext } from "../../machines/persistence/log/streams.js";
import { FencedError, RunQueueError } from "../errors.js";
import type { PersistedAgent } from "../../machines/persistence/persistence.js";
import { encodeOutput } from "../../machines/persistence/log/outputs.js";
import { Fences } from "../fences.js";
import type { ClaimRequest, QueueSignal, RunStore } from "../run-store.js";
import { checkAgentKnown, checkCommand, checkListOptions, checkRunId, checkSubmit, sendProblem } from "../requests.js";
import { dedupeKeyOf, type ClaimedRun, type InboxEvent, type ListOptions, type QueueStatus, type RunCommand, type RunInput, type RunStatusInfo, type RunSummary, type SubmitRequest } from "../schemas.js";
import { storableKey } from "../storable.js";
import { Waiters } from "../wait.js";
import type { RunEventInput, StoredRunEvent } from "../run-events.js";
import { retryWithin } from "../retry.js";
import { explainPgError, isTransientPgFault, type ServerNaming } from "./errors.js";
import { finishedPayload, NotificationListener } from "./listener.js";
import { clientConfig, ownPool } from "./pool.js";
import { claimAfterFinish, claimStatement, NOW, type ClaimRow } from "./statements.js";
import { migrate, requireTables } from "./migrations.js";
import { ConnectOptionsSchema, serverNaming, type PostgresRunStoreOptions, type ResolvedOptions } from "./options.js";
import { PostgresRunLog, type PgWriteFence } from "./run-log.js";

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
/** How long `untilListening` waits for the LISTEN session (a worker's start): past it, polling alone finds work until it comes up. */
const LISTEN_READY_MS = 2_000;

/**
 * The run queue on PostgreSQL: runs (each one's log: checkpoints, streams, journal, see run-log.ts),
 * their inboxes and the agents workers run, in one schema. Claims use `FOR UPDATE SKIP LOCKED`;
 * every write of a claimed run is conditional on its fencing token, in the same statement;
 * `LISTEN/NOTIFY` wakes workers and waiters, polling backs it up. Also a `RunLogStore` for
 * `runAgent({ checkpoints })`, `createReactMachine({ journal })`, `forkRun` and `loadThread`.
 */
export class PostgresRunStore extends PostgresRunLog implements RunStore {
  private readonly fences = new Fences();
  private readonly listener: NotificationListener | undefined;
  private readonly channel: string;

  private constructor(
    pool: pg.Pool,
    private readonly ownsPool: boolean,
    options: ResolvedOptions,
    server: ServerNaming,
    /** The server refused a connection: the pool stops growing, the LISTEN connection steps aside for a while. */
    private readonly refused: () => void,
  ) {
    super(pool, options, server);
    this.channel = `jianmu_runs_${options.schema}`;
    this.listener = options.listen ? new NotificationListener(clientConfig(options), this.channel) : undefined;
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
    const store = new PostgresRunStore(pool, ownsPool, resolved, server, () => own?.refused());
    let client: pg.PoolClient | undefined;
    try {
      client = await pool.connect();
      if (resolved.create) {
        // Runs saved by the release before become the first checkpoint of their log, written as a save would.
        await migrate(client, resolved.schema, async (query, runId, record) => void (await store.writeWithClient(query as never, runId, record, emptyContext(runId))));
      } else {
        await requireTables(client, resolved.schema);
      }
    } catch (error) {
      client?.release(true);
      client = undefined;
      if (ownsPool) await pool.end().catch(() => undefined);
      throw explainPgError(error, server);
    } finally {
      client?.release();
    }
    return store;
  }

  protected override refusedConnection(): void {
    this.refused();
    this.listener?.yieldConnection(LISTEN_YIELD_MS);
  }

  protected override fenceFor(runId: string, reading: boolean): PgWriteFence | undefined {
    return reading ? this.fences.get(runId) : this.fences.forWrite(runId);
  }

  protected override lost(runId: string, token: number): Error {
    return this.fences.lost(runId, token);
  }

  /**
   * A statement for a run this process holds, tried again with backoff while the database is away
   * and the lease lasts (queue/retry.ts). Past the lease, a statement of the run's actor (checkpoint,
   * journal, inbox) gives the run up: the worker stops it, and it resumes elsewhere from its
   * checkpoint. A hand-back (`giveUp: false`) just fails: the worker has let the actor go already.
   */
  protected override async held<T>(runId: string, token: number, statement: (attempt: number) => Promise<T>, giveUp = true): Promise<T> {
    try {
      return await retryWithin(statement, { transient: isTransientPgFault, deadline: () => this.fences.leaseEnd(runId, token) });
    } catch (error) {
      if (giveUp && isTransientPgFault(error)) throw this.fences.giveUp(runId, token, error);
      throw error;
    }
  }

  // ---- the public half ---------------------------------------------------------------------------

  async submit(request: SubmitRequest): Promise<string> {
    const { agent, input, runId } = checkSubmit(request);
    await checkAgentKnown(agent, this.options.unknownAgents, async () => (await this.query<{ name: string }>(`SELECT name FROM ${this.t("agents")} ORDER BY name`)).rows.map((r) => r.name));
    if (typeof input.threadId === "string") {
      const existing = await this.query<{ agent: string }>(`SELECT agent FROM ${this.t("runs")} WHERE run_id = $1`, [runId]);
      if (!existing.rows[0]) {
        await this.insertThreadRun(input.threadId, runId, { agent, status: "queued", input, wake: true });
        await this.query(`SELECT pg_notify($1, 'runnable:' || $2::text)`, [this.channel, runId]);
        return runId;
      }
    }
    const { rows } = await this.query<{ inserted: number; agent: string }>(
      `WITH ins AS (
         INSERT INTO ${this.t("runs")} (run_id, agent, input, status, wake_at, created_at, updated_at)
         VALUES ($1, $2, $3, 'queued', ${NOW}, ${NOW}, ${NOW}) ON CONFLICT (run_id) DO NOTHING RETURNING run_id),
       n AS (SELECT pg_notify($4, 'runnable:' || $1) FROM ins)
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
       n AS (SELECT pg_notify($4, 'runnable:' || $1) FROM ins)
       SELECT (SELECT count(*) FROM ins)::int AS inserted, (SELECT count(*) FROM due)::int AS due, (SELECT count(*) FROM n)::int AS notified`,
      [id, storableKey(dedupeKeyOf(checked)), JSON.stringify(checked), this.channel],
      "send: command",
    );
    return rows[0]!.inserted === 1;
  }

  /** Shared by every wait of this store: one LISTEN, one statement per wake-up however many wait (queue/wait.ts). */
  private readonly waiters = new Waiters({
    outputs: async (runIds) => {
      const { rows } = await this.query<{ run_id: string; output: string | null }>(`SELECT run_id, output FROM ${this.t("runs")} WHERE run_id = ANY($1::text[])`, [runIds]);
      const found = new Map<string, unknown>(rows.map((row) => [row.run_id, null]));
      const finished = rows.flatMap((row) => (row.output === null ? [] : [{ runId: row.run_id, text: row.output }]));
      for (const [runId, output] of finished.length > 0 ? await this.decodeOutputs(finished) : []) found.set(runId, output);
      return found;
    },
    unknownRun: (runId) => new RunQueueError("unknown_run", `wait: there is no run ${JSON.stringify(runId)} in schema ${this.schema}; check the id with store.list({})`),
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

  override list(): Promise<CheckpointSummary[]>;
  override list(options: ListOptions): Promise<RunSummary[]>;
  override async list(options?: ListOptions): Promise<CheckpointSummary[] | RunSummary[]> {
    if (options === undefined) return super.list();
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

  // ---- the worker's half ---------------------------------------------------------------------------

  async registerAgents(agents: readonly string[]): Promise<void> {
    await this.query(
      `INSERT INTO ${this.t("agents")} (name, last_seen) SELECT unnest($1::text[]), ${NOW} ON CONFLICT (name) DO UPDATE SET last_seen = excluded.last_seen`,
      [agents],
    );
  }

  async claim(request: ClaimRequest): Promise<ClaimedRun[]> {
    const sent = Date.now();
    const { rows } = await this.query<ClaimRow>(claimStatement(this.schema, request.agents), [request.limit, request.owner, request.leaseMs]);
    return this.claimed(rows, sent, request.leaseMs);
  }

  /** Claimed rows as runs to start: leased from when the claim was sent, each with its checkpoint (if it has one). */
  private claimed(rows: readonly ClaimRow[], sent: number, leaseMs: number): Promise<ClaimedRun[]> {
    for (const row of rows) this.fences.leased(row.run_id, Number(row.token), sent + leaseMs);
    return Promise.all(
      rows.map(async (row) => {
        const checkpoint = row.head !== null ? await this.load(row.run_id) : undefined;
        // Nothing saved yet and no thread to build on: its first save builds on nothing, without reading the row again.
        if (row.head === null && row.seed === null) this.knownFresh(row.run_id);
        return { runId: row.run_id, agent: row.agent, token: Number(row.token), input: JSON.parse(row.input) as RunInput, ...(checkpoint ? { checkpoint } : {}), inboxEmpty: row.inbox_empty };
      }),
    );
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

  async finish(runId: string, token: number, output: AgentOutput, lastCheckpoint?: PersistedAgent): Promise<boolean> {
    return (await this.finishWith(runId, token, output, lastCheckpoint)).finished;
  }

  /** The finish, and the claim of the slot it frees in the same statement (one round trip, one commit). */
  finishAndClaim(runId: string, token: number, output: AgentOutput, lastCheckpoint: PersistedAgent | undefined, next: ClaimRequest): Promise<{ finished: boolean; claimed: ClaimedRun[] }> {
    return this.finishWith(runId, token, output, lastCheckpoint, next.limit > 0 ? next : undefined);
  }

  private async finishWith(runId: string, token: number, output: AgentOutput, lastCheckpoint: PersistedAgent | undefined, next?: ClaimRequest): Promise<{ finished: boolean; claimed: ClaimedRun[] }> {
    const notFinished = { finished: false, claimed: [] };
    if (lastCheckpoint) {
      if (this.fences.heldOtherwise(runId, token)) return notFinished;
      const fence = this.fences.get(runId);
      try {
        // Not fenced here (a caller that claimed without fence()): the checkpoint first, as any save.
        if (!fence) await this.save(runId, lastCheckpoint);
        else {
          const sent = Date.now();
          // The last checkpoint, the output, the lease's end (and the next claim) in one statement (one commit).
          const taken = await this.saveLast(runId, lastCheckpoint, fence, {
            status: output.status,
            output: (context) => encodeOutput(output, context),
            channel: this.channel,
            notify: finishedPayload(runId, output),
            ...(next ? { also: (at: number) => claimAfterFinish(this.schema, at, next) } : {}),
          });
          this.fences.handedBack(runId, token);
          return { finished: true, claimed: next ? await this.claimed((taken as ClaimRow[] | null) ?? [], sent, next.leaseMs) : [] };
        }
      } catch (error) {
        if (error instanceof FencedError) return notFinished;
        throw error;
      }
    }
    const stored = await this.encodeOutput(runId, output);
    const finished = await this.handBack(runId, token, `status = $6, output = $7, wake_at = NULL, pending = '[]'`, [output.status, stored], {
      notify: finishedPayload(runId, output),
      applyAll: true,
      where: "finish: output",
    });
    return { finished, claimed: finished && next ? await this.claim(next) : [] };
  }

  release(runId: string, token: number): Promise<boolean> {
    return this.handBack(runId, token, `wake_at = ${NOW}`, [], { notify: `runnable:${runId}`, where: "release" });
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

  async lastRunEventSeq(runId: string): Promise<number> {
    const { rows } = await this.query<{ n: number | null }>(`SELECT max(seq) AS n FROM ${this.t("run_events")} WHERE run_id = $1`, [runId], "lastRunEventSeq");
    return rows[0]?.n ?? 0;
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

  untilListening(): Promise<void> {
    return this.listener ? this.listener.listening(LISTEN_READY_MS) : Promise.resolve();
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

