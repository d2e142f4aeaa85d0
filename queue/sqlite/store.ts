import { z } from "zod";
import type { CheckpointSummary } from "../../machines/persistence/checkpoints/store.js";
import type { AgentOutput } from "../../machines/contract/context.js";
import { SqliteRunLog, type SqliteWriteFence } from "../../machines/persistence/log/sqlite/sqlite-log.js";
import type { SqliteRunRow } from "../../machines/persistence/log/sqlite/schema.js";
import { errorText, FencedError, RunQueueError } from "../errors.js";
import type { PersistedAgent } from "../../machines/persistence/persistence.js";
import { Fences } from "../fences.js";
import type { ClaimRequest, QueueSignal, RunStore } from "../run-store.js";
import { checkAgentKnown, checkCommand, checkListOptions, checkRunId, checkSubmit, sendProblem } from "../requests.js";
import { dedupeKeyOf, firstIssue, UnknownAgentsSchema, type ClaimedRun, type InboxEvent, type ListOptions, type RunCommand, type RunInput, type RunStatusInfo, type RunSummary, type SubmitRequest, type UnknownAgents } from "../schemas.js";
import { Waiters } from "../wait.js";
import { DUE_RUNS_OF_AGENT } from "./statements.js";
import type { RunEventInput, StoredRunEvent } from "../run-events.js";

const OptionsSchema = z
  .object({
    /** The database file (created with its directory when missing). Several processes on one machine may share it. */
    path: z.string().min(1, "must name the database file, e.g. .jianmu/runs.db"),
    /** How long a write waits for another process holding the lock. */
    busyTimeoutMs: z.number().int().min(0).default(5_000),
    /** `wait()` reads the awaited runs at least this often (SQLite has no notifications between processes). */
    pollMs: z.number().int().min(10).default(250),
    /**
     * While anyone in this process subscribes (a worker, a wait), look this often whether another
     * process wrote to the file (`PRAGMA data_version`, a few microseconds): a worker then claims, a
     * wait reads, at once instead of at their next poll.
     */
    watchMs: z.number().int().min(1).max(60_000).default(10),
    /** Keep only the last N checkpoints of each run (and those a fork starts from). Default: every one. */
    keepCheckpoints: z.number().int().min(1).optional(),
    /** Delete a finished run once it has been finished this long (ms; machines/persistence/log/finished-retention.ts says what is kept). Default: kept forever. */
    keepFinishedMs: z.number().int().min(1).optional(),
    unknownAgents: UnknownAgentsSchema,
  })
  .strict();
export type SqliteRunStoreOptions = z.input<typeof OptionsSchema>;

function parse(options: SqliteRunStoreOptions) {
  const parsed = OptionsSchema.safeParse(options);
  if (!parsed.success) throw new RunQueueError("invalid_input", `SqliteRunStore: ${firstIssue(parsed.error, "options")} (options are { path, busyTimeoutMs?, pollMs?, watchMs?, keepCheckpoints?, keepFinishedMs?, unknownAgents? })`);
  return parsed.data;
}

/**
 * The run queue in one SQLite file: the embedded default (one machine, several processes). Runs are
 * kept by the run log (the same layout as `SqliteCheckpointStore`'s, so one file serves both); this
 * adds the queue. Claims run in `BEGIN IMMEDIATE` transactions; every write of a claimed run is
 * conditional on its fencing token. No notifications between processes: while someone subscribes,
 * the store watches the file's `data_version` (it changes when another connection commits) and tells
 * its subscribers `changed`; workers and waiters also poll.
 */
export class SqliteRunStore extends SqliteRunLog implements RunStore {
  private readonly fences = new Fences();
  private readonly pollMs: number;
  private readonly unknownAgents: UnknownAgents;
  /** This process's subscribers (see `subscribe`). */
  private readonly local = new Set<(signal: QueueSignal) => void>();
  private readonly watchMs: number;
  /** Watches the file for other processes' commits while anyone subscribes. */
  private watch: { timer: NodeJS.Timeout; version: number } | undefined;

  private tell(signal: QueueSignal): void {
    for (const listener of [...this.local]) listener(signal);
  }

  constructor(options: SqliteRunStoreOptions) {
    const { path, busyTimeoutMs, pollMs, watchMs, keepCheckpoints, keepFinishedMs, unknownAgents } = parse(options);
    super({
      path,
      busyTimeoutMs,
      ...(keepCheckpoints !== undefined ? { keepCheckpoints } : {}),
      ...(keepFinishedMs !== undefined ? { keepFinishedMs } : {}),
      fail: (kind, message, cause) =>
        kind === "open"
          ? new RunQueueError("connection", `SqliteRunStore: ${message}; check the path and its directory's permissions`, { cause })
          : new RunQueueError("schema", `SqliteRunStore: ${message}`, { cause }),
    });
    this.pollMs = pollMs;
    this.watchMs = watchMs;
    this.unknownAgents = unknownAgents;
  }

  protected override closedError(): Error {
    return new RunQueueError("closed", `SqliteRunStore ${this.path} is closed; open a new one`);
  }

  protected override fenceFor(runId: string, reading: boolean): SqliteWriteFence | undefined {
    return reading ? this.fences.get(runId) : this.fences.forWrite(runId);
  }

  protected override lost(runId: string, token: number): Error {
    return this.fences.lost(runId, token);
  }

  /**
   * A held run's transaction. The file stayed locked through busyTimeoutMs (SQLite's own retry): the
   * worker gives the run up, as after a lost PostgreSQL connection, instead of the model reading
   * that its tool's journal failed; it resumes from its checkpoint.
   */
  protected override holding<T>(runId: string, token: number, transaction: () => T): T {
    try {
      return transaction();
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (code === "SQLITE_BUSY" || code === "SQLITE_LOCKED" || code === "SQLITE_BUSY_SNAPSHOT") throw this.fences.giveUp(runId, token, error);
      throw error;
    }
  }

  protected override fencedSaveStored(runId: string, fence: SqliteWriteFence): void {
    this.sql(`UPDATE jianmu_inbox SET applied_at = ? WHERE run_id = ? AND id <= ? AND applied_at IS NULL`).run(Date.now(), runId, fence.delivered);
  }

  async submit(request: SubmitRequest): Promise<string> {
    const { agent, input, runId } = checkSubmit(request);
    await checkAgentKnown(agent, this.unknownAgents, () => (this.sql(`SELECT name FROM jianmu_agents ORDER BY name`).all() as { name: string }[]).map((r) => r.name));
    const existing = this.runRow(runId);
    if (!existing) {
      const now = Date.now();
      if (typeof input.threadId === "string") this.insertThreadRun(input.threadId, runId, { agent, status: "queued", input: JSON.stringify(input), wakeAt: now });
      else this.sql(`INSERT INTO jianmu_runs (run_id, agent, input, status, wake_at, created_at, updated_at) VALUES (?, ?, ?, 'queued', ?, ?, ?) ON CONFLICT (run_id) DO NOTHING`).run(runId, agent, JSON.stringify(input), now, now, now);
    }
    const row = this.runRow(runId)!;
    if (row.agent !== agent) throw new RunQueueError("invalid_input", `submit: run ${runId} already exists for agent "${row.agent}", not "${agent}"; submit under another runId`);
    this.tell({ kind: "runnable", runId });
    return runId;
  }

  async send(runId: string, command: RunCommand): Promise<boolean> {
    const id = checkRunId(runId, "send");
    const checked = checkCommand(command);
    const row = this.runRow(id);
    const problem = sendProblem(id, checked, row ? { status: row.status, pending: JSON.parse(row.pending) as RunStatusInfo["pendingApprovals"] } : undefined);
    if (problem) throw problem;
    const sent = this.db
      .transaction(() => {
        const now = Date.now();
        const inserted = this.sql(`INSERT INTO jianmu_inbox (run_id, dedupe_key, command, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (run_id, dedupe_key) DO NOTHING`).run(id, dedupeKeyOf(checked), JSON.stringify(checked), now).changes === 1;
        // The run is due now (wake_at): claims look at wake_at alone, never at the inbox.
        if (inserted) this.sql(`UPDATE jianmu_runs SET wake_at = ? WHERE run_id = ? AND status IN ('queued', 'running', 'awaitingApproval')`).run(now, id);
        return inserted;
      })
      .immediate();
    if (sent) this.tell({ kind: "runnable", runId: id });
    return sent;
  }

  /** Every wait of this store polls together: one statement per `pollMs` however many wait (queue/wait.ts). */
  private readonly waiters = new Waiters({
    outputs: async (runIds) => {
      const rows = this.sql(`SELECT run_id, output FROM jianmu_runs WHERE run_id IN (SELECT value FROM json_each(?))`).all(JSON.stringify(runIds)) as { run_id: string; output: string | null }[];
      return new Map(rows.map((row) => [row.run_id, row.output === null ? null : this.decodeOutput(row.run_id, row.output)]));
    },
    unknownRun: (runId) => new RunQueueError("unknown_run", `wait: there is no run ${JSON.stringify(runId)} in ${this.path}; check the id with store.list({})`),
    subscribe: (listener) => this.subscribe(listener),
    // No notifications between processes: waiters poll (and read when the watch sees another process commit).
    listeningSince: () => undefined,
    pollMs: () => this.pollMs,
  });

  async wait(runId: string, options: { signal?: AbortSignal } = {}): Promise<AgentOutput> {
    return this.waiters.wait(checkRunId(runId, "wait"), options.signal);
  }

  private info(row: SqliteRunRow): RunStatusInfo {
    const leased = row.owner !== null && row.lease_until !== null && row.lease_until > Date.now();
    return { runId: row.run_id, agent: row.agent, status: row.status, pendingApprovals: JSON.parse(row.pending), ...(leased ? { owner: row.owner! } : {}), updatedAt: row.updated_at };
  }

  async status(runId: string): Promise<RunStatusInfo> {
    const id = checkRunId(runId, "status");
    const row = this.runRow(id);
    if (!row) throw new RunQueueError("unknown_run", `status: there is no run ${JSON.stringify(id)} in ${this.path}; check the id with store.list({})`);
    return this.info(row);
  }

  override list(): CheckpointSummary[];
  override list(options: ListOptions): Promise<RunSummary[]>;
  override list(options?: ListOptions): CheckpointSummary[] | Promise<RunSummary[]> {
    if (options === undefined) return super.list();
    const { status, agent, limit } = checkListOptions(options);
    const rows = this.sql(`SELECT * FROM jianmu_runs WHERE (@status IS NULL OR status = @status) AND (@agent IS NULL OR agent = @agent) ORDER BY created_at DESC, rowid DESC LIMIT @limit`).all({
      status: status ?? null,
      agent: agent ?? null,
      limit,
    }) as SqliteRunRow[];
    return Promise.resolve(rows.map((row) => ({ ...this.info(row), ...(row.state ? { state: row.state } : {}), iteration: row.iteration, createdAt: row.created_at })));
  }

  override async close(): Promise<void> {
    this.stopWatching();
    super.close();
  }

  // ---- the worker's half ----

  async registerAgents(agents: readonly string[]): Promise<void> {
    const now = Date.now();
    this.db.transaction(() => {
      for (const name of agents) this.sql(`INSERT INTO jianmu_agents (name, last_seen) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET last_seen = excluded.last_seen`).run(name, now);
    }).immediate();
  }

  async claim(request: ClaimRequest): Promise<ClaimedRun[]> {
    return this.claimedRuns(this.db.transaction(() => this.claimRows(request)).immediate());
  }

  /** The claim's reads and writes, inside the caller's transaction: each agent's due runs, a few per agent in the order they are taken (DUE_RUNS_OF_AGENT), and the oldest of those. */
  private claimRows(request: ClaimRequest): (SqliteRunRow & { inbox_empty: number })[] {
    const now = Date.now();
    const due = this.sql(DUE_RUNS_OF_AGENT);
    const candidates = [...new Set(request.agents)].flatMap((agent) => due.all(agent, now, now, request.limit) as (SqliteRunRow & { inbox_empty: number })[]);
    const rows = candidates.sort((a, b) => a.wake_at! - b.wake_at! || a.created_at - b.created_at).slice(0, request.limit);
    const update = this.sql(`UPDATE jianmu_runs SET owner = ?, token = token + 1, lease_until = ?, wake_at = ?, status = 'running', updated_at = ? WHERE run_id = ?`);
    for (const row of rows) update.run(request.owner, now + request.leaseMs, now, now, row.run_id);
    return rows;
  }

  private claimedRuns(rows: readonly (SqliteRunRow & { inbox_empty: number })[]): ClaimedRun[] {
    return rows.map((row) => {
      const checkpoint = this.load(row.run_id);
      return { runId: row.run_id, agent: row.agent, token: row.token + 1, input: JSON.parse(row.input) as RunInput, ...(checkpoint ? { checkpoint } : {}), inboxEmpty: row.inbox_empty === 1 };
    });
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
    return this.sql(`UPDATE jianmu_runs SET lease_until = ? WHERE run_id = ? AND token = ? AND owner IS NOT NULL`).run(Date.now() + leaseMs, runId, token).changes === 1;
  }

  async inbox(runId: string, afterId: number): Promise<InboxEvent[]> {
    return (this.sql(`SELECT id, command FROM jianmu_inbox WHERE run_id = ? AND id > ? AND applied_at IS NULL ORDER BY id`).all(runId, afterId) as { id: number; command: string }[]).map((row) => ({
      id: row.id,
      command: JSON.parse(row.command) as RunCommand,
    }));
  }

  private handBack(runId: string, token: number, set: string, values: unknown[], applyAll = false): boolean {
    const delivered = applyAll ? Number.MAX_SAFE_INTEGER : this.fences.deliveredOf(runId);
    return this.db.transaction(() => {
      const now = Date.now();
      const changes = this.sql(`UPDATE jianmu_runs SET owner = NULL, lease_until = NULL, updated_at = ?, ${set} WHERE run_id = ? AND token = ?`).run(now, ...values, runId, token).changes;
      if (changes === 1) this.sql(`UPDATE jianmu_inbox SET applied_at = ? WHERE run_id = ? AND id <= ? AND applied_at IS NULL`).run(now, runId, delivered);
      return changes === 1;
    }).immediate();
  }

  async park(runId: string, token: number, wakeAt: number | undefined): Promise<boolean> {
    // An event that arrived after the last delivered one keeps the run due (send() set wake_at before this).
    const due = `EXISTS (SELECT 1 FROM jianmu_inbox i WHERE i.run_id = ? AND i.applied_at IS NULL AND i.id > ?)`;
    return this.handBack(runId, token, `status = 'awaitingApproval', wake_at = CASE WHEN ${due} THEN ? ELSE ? END`, [runId, this.fences.deliveredOf(runId), Date.now(), wakeAt ?? null]);
  }

  async finish(runId: string, token: number, output: AgentOutput, lastCheckpoint?: PersistedAgent): Promise<boolean> {
    return this.finishNow(runId, token, output, lastCheckpoint);
  }

  /** The finish, and the claim of the slot it frees, in one transaction (one commit). */
  async finishAndClaim(runId: string, token: number, output: AgentOutput, lastCheckpoint: PersistedAgent | undefined, next: ClaimRequest): Promise<{ finished: boolean; claimed: ClaimedRun[] }> {
    let rows: (SqliteRunRow & { inbox_empty: number })[] = [];
    // The file staying locked past busyTimeoutMs gives the run up, as for finish() (holding).
    const finished = this.holding(runId, token, () =>
      this.db
        .transaction(() => {
          const done = this.finishNow(runId, token, output, lastCheckpoint);
          if (done && next.limit > 0) rows = this.claimRows(next);
          return done;
        })
        .immediate(),
    );
    return { finished, claimed: this.claimedRuns(rows) };
  }

  private finishNow(runId: string, token: number, output: AgentOutput, lastCheckpoint: PersistedAgent | undefined): boolean {
    const write = () => {
      let stored: string;
      try {
        stored = this.encodeOutput(runId, output);
      } catch (error) {
        throw new RunQueueError("damaged", `finish: the output of run ${runId} could not be stored: ${errorText(error)}`, { cause: error });
      }
      return this.handBack(runId, token, `status = ?, output = ?, wake_at = NULL, pending = '[]'`, [output.status, stored], true);
    };
    if (!lastCheckpoint) return write();
    if (this.fences.heldOtherwise(runId, token)) return false;
    // The last checkpoint, the output and the lease's end in one transaction (one commit).
    try {
      return this.holding(runId, token, () => this.db.transaction(() => (this.save(runId, lastCheckpoint), write())).immediate());
    } catch (error) {
      if (error instanceof FencedError) return false;
      throw error;
    }
  }

  async release(runId: string, token: number): Promise<boolean> {
    return this.handBack(runId, token, `wake_at = ?`, [Date.now()]);
  }

  /**
   * Within this process (a handler and its embedded worker share the store), a submit, a send and an
   * append are told at once. What other processes write is told as `changed`, found by watching the
   * file's `data_version` every `watchMs` while anyone subscribes.
   */
  subscribe(listener: (signal: QueueSignal) => void): () => void {
    this.local.add(listener);
    this.startWatching();
    return () => {
      this.local.delete(listener);
      if (this.local.size === 0) this.stopWatching();
    };
  }

  private dataVersion(): number {
    return this.db.pragma("data_version", { simple: true }) as number;
  }

  private startWatching(): void {
    if (this.watch || !this.db.open) return;
    const timer = setInterval(() => {
      if (!this.watch || !this.db.open) return this.stopWatching();
      const version = this.dataVersion();
      if (version === this.watch.version) return;
      this.watch.version = version;
      this.tell({ kind: "changed" });
    }, this.watchMs);
    // The watch keeps no process alive: a worker or a wait does that itself.
    timer.unref();
    this.watch = { timer, version: this.dataVersion() };
  }

  private stopWatching(): void {
    if (this.watch) clearInterval(this.watch.timer);
    this.watch = undefined;
  }

  async appendRunEvents(runId: string, token: number, events: readonly RunEventInput[]): Promise<boolean> {
    const appended = this.db
      .transaction(() => {
        if (this.runRow(runId)?.token !== token) return false;
        const last = this.lastEventSeq(runId);
        const insert = this.sql(`INSERT INTO jianmu_events (run_id, seq, type, data) VALUES (?, ?, ?, ?)`);
        events.forEach((event, i) => insert.run(runId, last + i + 1, event.type, JSON.stringify(event.data)));
        return true;
      })
      .immediate();
    if (appended) this.tell({ kind: "events", runId });
    return appended;
  }

  async lastRunEventSeq(runId: string): Promise<number> {
    return this.lastEventSeq(runId);
  }

  private lastEventSeq(runId: string): number {
    return (this.sql(`SELECT max(seq) AS n FROM jianmu_events WHERE run_id = ?`).get(runId) as { n: number | null }).n ?? 0;
  }

  async runEventsAfter(runId: string, afterSeq: number, limit: number): Promise<StoredRunEvent[]> {
    const rows = this.sql(`SELECT seq, type, data FROM jianmu_events WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?`).all(runId, afterSeq, limit) as { seq: number; type: string; data: string }[];
    return rows.map((row) => ({ seq: row.seq, type: row.type, data: JSON.parse(row.data) as unknown }));
  }

  async pruneRunEvents(finishedBefore: number): Promise<number> {
    const finished = `SELECT run_id FROM jianmu_runs WHERE status IN ('succeeded', 'failed') AND updated_at < ?`;
    return this.db
      .transaction(() => {
        const runs = (this.sql(`SELECT count(DISTINCT run_id) AS n FROM jianmu_events WHERE run_id IN (${finished})`).get(finishedBefore) as { n: number }).n;
        this.sql(`DELETE FROM jianmu_events WHERE run_id IN (${finished})`).run(finishedBefore);
        return runs;
      })
      .immediate();
  }
}
