import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import Database from "better-sqlite3";
import { z } from "zod";
import type { ToolOutcome } from "../../actors/tool-executor.js";
import type { JournalEntry, JournalKey, ToolJournal } from "../../actors/tool-journal.js";
import { checkRecordId, journalEntryOf, type CheckpointStore, type CheckpointSummary } from "../../machines/persistence/checkpoints/store.js";
import type { AgentOutput } from "../../machines/contract/context.js";
import { readPersisted, type PersistedAgent, type RunStatus } from "../../machines/persistence/persistence.js";
import type { StoredBlob } from "../../machines/persistence/blobs.js";
import { SqliteBlobTable } from "../../machines/persistence/checkpoints/sqlite-blobs.js";
import { errorText, RunQueueError } from "../errors.js";
import { Fences } from "../fences.js";
import { queueOwned, type QueueSignal, type RunStore } from "../run-store.js";
import { checkAgentKnown, checkCommand, checkListOptions, checkRunId, checkSubmit, sendProblem } from "../requests.js";
import {
  dedupeKeyOf,
  firstIssue,
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
  type UnknownAgents,
  UnknownAgentsSchema,
} from "../schemas.js";
import { Waiters } from "../wait.js";
import type { RunEventInput, StoredRunEvent } from "../run-events.js";

const OptionsSchema = z
  .object({
    /** The database file (created with its directory when missing). Several processes on one machine may share it. */
    path: z.string().min(1, "must name the database file, e.g. .jianmu/runs.db"),
    /** How long a write waits for another process holding the lock. */
    busyTimeoutMs: z.number().int().min(0).default(5_000),
    /** `wait()` looks at the run this often (SQLite has no notifications between processes). */
    pollMs: z.number().int().min(10).default(250),
    unknownAgents: UnknownAgentsSchema,
  })
  .strict();
export type SqliteRunStoreOptions = z.input<typeof OptionsSchema>;

const LAYOUT_VERSION = 1;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS jianmu_queue_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS jianmu_queue_runs (
  run_id TEXT PRIMARY KEY, agent TEXT NOT NULL, input TEXT NOT NULL DEFAULT '{}',
  status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'awaitingApproval', 'succeeded', 'failed')),
  owner TEXT, token INTEGER NOT NULL DEFAULT 0, lease_until INTEGER, wake_at INTEGER,
  machine TEXT, checkpoint TEXT, state TEXT, iteration INTEGER NOT NULL DEFAULT 0, saved_at INTEGER,
  pending TEXT NOT NULL DEFAULT '[]', output TEXT, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS jianmu_queue_claimable ON jianmu_queue_runs (agent, wake_at) WHERE status IN ('queued', 'running', 'awaitingApproval');
CREATE TABLE IF NOT EXISTS jianmu_queue_inbox (
  id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL, dedupe_key TEXT NOT NULL, command TEXT NOT NULL,
  created_at INTEGER NOT NULL, applied_at INTEGER, UNIQUE (run_id, dedupe_key)
);
CREATE TABLE IF NOT EXISTS jianmu_queue_journal (
  run_id TEXT NOT NULL, iteration INTEGER NOT NULL, call_id TEXT NOT NULL, name TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('started', 'completed')), outcome TEXT, updated_at INTEGER NOT NULL,
  PRIMARY KEY (run_id, iteration, call_id)
);
CREATE TABLE IF NOT EXISTS jianmu_queue_agents (name TEXT PRIMARY KEY, last_seen INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS jianmu_queue_events (
  run_id TEXT NOT NULL, seq INTEGER NOT NULL, type TEXT NOT NULL, data TEXT NOT NULL, PRIMARY KEY (run_id, seq)
);`;

interface RunRow {
  run_id: string;
  agent: string;
  input: string;
  status: QueueStatus;
  owner: string | null;
  token: number;
  lease_until: number | null;
  checkpoint: string | null;
  machine: string | null;
  state: string | null;
  iteration: number;
  saved_at: number | null;
  pending: string;
  output: string | null;
  created_at: number;
  updated_at: number;
}

/**
 * The run queue in one SQLite file: the embedded default (one machine, several processes). Claims
 * run in `BEGIN IMMEDIATE` transactions; every write of a claimed run is conditional on its fencing
 * token. No notifications: workers and waiters poll.
 */
export class SqliteRunStore implements RunStore, CheckpointStore, ToolJournal {
  readonly path: string;
  private readonly db: Database.Database;
  private readonly fences = new Fences();
  private readonly pollMs: number;
  private readonly blobs: SqliteBlobTable;
  private readonly unknownAgents: UnknownAgents;
  /** This process's subscribers (see `subscribe`). */
  private readonly local = new Set<(signal: QueueSignal) => void>();

  private tell(signal: QueueSignal): void {
    for (const listener of [...this.local]) listener(signal);
  }

  constructor(options: SqliteRunStoreOptions) {
    const parsed = OptionsSchema.safeParse(options);
    if (!parsed.success) throw new RunQueueError("invalid_input", `SqliteRunStore: ${firstIssue(parsed.error, "options")} (options are { path, busyTimeoutMs?, pollMs?, unknownAgents? })`);
    const { path, busyTimeoutMs, pollMs, unknownAgents } = parsed.data;
    this.path = path;
    this.pollMs = pollMs;
    this.unknownAgents = unknownAgents;
    try {
      if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
      this.db = new Database(path, { timeout: busyTimeoutMs });
    } catch (error) {
      throw new RunQueueError("connection", `SqliteRunStore: cannot open ${path}: ${errorText(error)}; check the path and its directory's permissions`, { cause: error });
    }
    try {
      this.db.pragma("journal_mode = WAL");
      this.db.pragma("synchronous = FULL");
      this.db.transaction(() => {
        this.db.exec(SCHEMA);
        const row = this.db.prepare<[], { value: string }>(`SELECT value FROM jianmu_queue_meta WHERE key = 'layout'`).get();
        const version = row ? Number(row.value) : 0;
        if (version > LAYOUT_VERSION) throw new Error(`its run queue was written by a newer jianmu (layout ${version}, this one knows ${LAYOUT_VERSION}); open it with that version`);
        this.db.prepare(`INSERT INTO jianmu_queue_meta (key, value) VALUES ('layout', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`).run(String(LAYOUT_VERSION));
      }).immediate();
    } catch (error) {
      this.db.close();
      throw new RunQueueError("schema", `SqliteRunStore: ${path}: ${errorText(error)}`, { cause: error });
    }
    this.blobs = new SqliteBlobTable(this.db, "jianmu_queue_blobs");
  }

  private get open(): Database.Database {
    if (!this.db.open) throw new RunQueueError("closed", `SqliteRunStore ${this.path} is closed; open a new one`);
    return this.db;
  }

  private row(runId: string): RunRow | undefined {
    return this.open.prepare<[string], RunRow>(`SELECT * FROM jianmu_queue_runs WHERE run_id = ?`).get(runId);
  }

  async submit(request: SubmitRequest): Promise<string> {
    const { agent, input, runId } = checkSubmit(request);
    const db = this.open;
    await checkAgentKnown(agent, this.unknownAgents, () => db.prepare<[], { name: string }>(`SELECT name FROM jianmu_queue_agents ORDER BY name`).all().map((r) => r.name));
    const now = Date.now();
    db.prepare(`INSERT INTO jianmu_queue_runs (run_id, agent, input, status, wake_at, created_at, updated_at) VALUES (?, ?, ?, 'queued', ?, ?, ?) ON CONFLICT (run_id) DO NOTHING`).run(
      runId, agent, JSON.stringify(input), now, now, now,
    );
    const existing = this.row(runId)!;
    if (existing.agent !== agent) throw new RunQueueError("invalid_input", `submit: run ${runId} already exists for agent "${existing.agent}", not "${agent}"; submit under another runId`);
    this.tell({ kind: "runnable" });
    return runId;
  }

  async send(runId: string, command: RunCommand): Promise<boolean> {
    const id = checkRunId(runId, "send");
    const checked = checkCommand(command);
    const row = this.row(id);
    const problem = sendProblem(id, checked, row ? { status: row.status, pending: JSON.parse(row.pending) as RunStatusInfo["pendingApprovals"] } : undefined);
    if (problem) throw problem;
    const result = this.open
      .prepare(`INSERT INTO jianmu_queue_inbox (run_id, dedupe_key, command, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (run_id, dedupe_key) DO NOTHING`)
      .run(id, dedupeKeyOf(checked), JSON.stringify(checked), Date.now());
    if (result.changes === 1) this.tell({ kind: "runnable" });
    return result.changes === 1;
  }

  /** Every wait of this store polls together: one statement per `pollMs` however many wait (queue/wait.ts). */
  private readonly waiters = new Waiters({
    outputOf: async (runId) => {
      const row = this.row(runId);
      if (!row) throw new RunQueueError("unknown_run", `wait: there is no run ${JSON.stringify(runId)} in ${this.path}; check the id with store.list({})`);
      return row.output;
    },
    outputs: async (runIds) => {
      const rows = this.open
        .prepare<[string], { run_id: string; output: string }>(`SELECT run_id, output FROM jianmu_queue_runs WHERE run_id IN (SELECT value FROM json_each(?)) AND output IS NOT NULL`)
        .all(JSON.stringify(runIds));
      return new Map(rows.map((row) => [row.run_id, row.output]));
    },
    subscribe: (listener) => this.subscribe(listener),
    // No notifications between processes: waiters poll.
    listeningSince: () => undefined,
    pollMs: () => this.pollMs,
  });

  async wait(runId: string, options: { signal?: AbortSignal } = {}): Promise<AgentOutput> {
    return this.waiters.wait(checkRunId(runId, "wait"), options.signal);
  }

  private info(row: RunRow): RunStatusInfo {
    const leased = row.owner !== null && row.lease_until !== null && row.lease_until > Date.now();
    return { runId: row.run_id, agent: row.agent, status: row.status, pendingApprovals: JSON.parse(row.pending), ...(leased ? { owner: row.owner! } : {}), updatedAt: row.updated_at };
  }

  async status(runId: string): Promise<RunStatusInfo> {
    const id = checkRunId(runId, "status");
    const row = this.row(id);
    if (!row) throw new RunQueueError("unknown_run", `status: there is no run ${JSON.stringify(id)} in ${this.path}; check the id with store.list({})`);
    return this.info(row);
  }

  list(): CheckpointSummary[];
  list(options: ListOptions): Promise<RunSummary[]>;
  list(options?: ListOptions): CheckpointSummary[] | Promise<RunSummary[]> {
    if (options === undefined) {
      return this.open
        .prepare<[], RunRow>(`SELECT * FROM jianmu_queue_runs WHERE checkpoint IS NOT NULL ORDER BY saved_at DESC, run_id`)
        .all()
        .map((row) => ({
          runId: row.run_id,
          machine: row.machine ?? row.agent,
          state: row.state ?? "",
          status: (row.status === "queued" ? "running" : row.status) as RunStatus,
          iteration: row.iteration,
          savedAt: row.saved_at ?? 0,
        }));
    }
    const { status, agent, limit } = checkListOptions(options);
    const rows = this.open
      .prepare<[string | null, string | null, string | null, string | null, number], RunRow>(
        `SELECT * FROM jianmu_queue_runs WHERE (? IS NULL OR status = ?) AND (? IS NULL OR agent = ?) ORDER BY created_at DESC, rowid DESC LIMIT ?`,
      )
      .all(status ?? null, status ?? null, agent ?? null, agent ?? null, limit);
    return Promise.resolve(rows.map((row) => ({ ...this.info(row), ...(row.state ? { state: row.state } : {}), iteration: row.iteration, createdAt: row.created_at })));
  }

  async close(): Promise<void> {
    if (this.db.open) this.db.close();
  }

  // ---- CheckpointStore ----

  save(runId: string, record: PersistedAgent): void {
    checkRecordId(runId, record);
    const db = this.open;
    const body = JSON.stringify(record);
    const pending = JSON.stringify(pendingFromSnapshot(record.snapshot));
    const now = Date.now();
    const fence = this.fences.forWrite(runId);
    if (fence) {
      const updated = this.holding(runId, () => db.transaction(() => {
        const changes = db
          .prepare(
            // The queue's status is the worker's to move (claim, park, finish), never a checkpoint's.
            `UPDATE jianmu_queue_runs SET checkpoint = ?, machine = ?, state = ?, iteration = ?, saved_at = ?, pending = ?, updated_at = ? WHERE run_id = ? AND token = ?`,
          )
          .run(body, record.machine, record.state, record.iteration, record.savedAt, pending, now, runId, fence.token).changes;
        if (changes === 1) db.prepare(`UPDATE jianmu_queue_inbox SET applied_at = ? WHERE run_id = ? AND id <= ? AND applied_at IS NULL`).run(now, runId, fence.delivered);
        return changes;
      }).immediate());
      if (updated !== 1) throw this.fences.lost(runId);
      return;
    }
    const result = db.prepare(
      `INSERT INTO jianmu_queue_runs (run_id, agent, status, machine, checkpoint, state, iteration, saved_at, pending, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (run_id) DO UPDATE SET status = excluded.status, machine = excluded.machine, checkpoint = excluded.checkpoint, state = excluded.state,
         iteration = excluded.iteration, saved_at = excluded.saved_at, pending = excluded.pending, updated_at = excluded.updated_at
       WHERE jianmu_queue_runs.token = 0`,
    ).run(runId, record.machine, record.status, record.machine, body, record.state, record.iteration, record.savedAt, pending, now, now);
    if (result.changes !== 1) throw queueOwned(runId);
  }

  load(runId: string): PersistedAgent | undefined {
    const text = this.row(runId)?.checkpoint;
    return text ? readPersisted(text) : undefined;
  }

  delete(runId: string): boolean {
    const db = this.open;
    return db.transaction(() => {
      db.prepare(`DELETE FROM jianmu_queue_journal WHERE run_id = ?`).run(runId);
      db.prepare(`DELETE FROM jianmu_queue_inbox WHERE run_id = ?`).run(runId);
      this.blobs.forget(runId);
      return db.prepare(`DELETE FROM jianmu_queue_runs WHERE run_id = ?`).run(runId).changes > 0;
    })();
  }

  // ---- BlobStore (not fenced: a blob is named by its content, so a late write of a lost run changes nothing) ----

  putBlob(runId: string, sha256: string, blob: StoredBlob): void {
    this.openBlobs.put(runId, sha256, blob);
  }

  getBlob(runId: string, sha256: string): StoredBlob | undefined {
    return this.openBlobs.get(runId, sha256);
  }

  /** The blob table, once `open` has said the store is not closed. */
  private get openBlobs(): SqliteBlobTable {
    return this.open && this.blobs;
  }

  /**
   * A held run's transaction. The file stayed locked through busyTimeoutMs (SQLite's own retry): the
   * worker gives the run up, as after a lost PostgreSQL connection, instead of the model reading
   * that its tool's journal failed; it resumes from its checkpoint.
   */
  private holding<T>(runId: string, transaction: () => T): T {
    try {
      return transaction();
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (code === "SQLITE_BUSY" || code === "SQLITE_LOCKED" || code === "SQLITE_BUSY_SNAPSHOT") throw this.fences.giveUp(runId, error);
      throw error;
    }
  }

  // ---- ToolJournal ----

  /** Runs `write` in one transaction with the token check; throws FencedError when the token moved on. */
  private fenced<T>(runId: string, write: () => T, reading = false): T {
    // A read is checked only while this process holds the run; after it gave the run up, it is a plain read.
    const fence = reading ? this.fences.get(runId) : this.fences.forWrite(runId);
    if (!fence) return write();
    const db = this.open;
    const result = this.holding(runId, () => db.transaction(() => {
      const current = db.prepare<[string], { token: number }>(`SELECT token FROM jianmu_queue_runs WHERE run_id = ?`).get(runId);
      if (current?.token !== fence.token) return { lost: true as const };
      return { lost: false as const, value: write() };
    }).immediate());
    if (result.lost) throw this.fences.lost(runId);
    return result.value;
  }

  started(key: JournalKey, name: string): boolean {
    return this.fenced(key.runId, () =>
      this.open
        .prepare(`INSERT INTO jianmu_queue_journal (run_id, iteration, call_id, name, state, updated_at) VALUES (?, ?, ?, ?, 'started', ?) ON CONFLICT DO NOTHING`)
        .run(key.runId, key.iteration, key.callId, name, Date.now()).changes === 1,
    );
  }

  completed(key: JournalKey, outcome: ToolOutcome): void {
    this.fenced(key.runId, () =>
      this.open
        .prepare(
          `INSERT INTO jianmu_queue_journal (run_id, iteration, call_id, name, state, outcome, updated_at) VALUES (?, ?, ?, ?, 'completed', ?, ?)
           ON CONFLICT (run_id, iteration, call_id) DO UPDATE SET name = excluded.name, state = 'completed', outcome = excluded.outcome, updated_at = excluded.updated_at WHERE state = 'started'`,
        )
        .run(key.runId, key.iteration, key.callId, outcome.name, JSON.stringify(outcome), Date.now()),
    );
  }

  /** Fenced like the writes: a worker that lost the run must not replay the new owner's outcomes as its own. */
  lookup(key: JournalKey): JournalEntry | undefined {
    const row = this.fenced(key.runId, () => this.open
      .prepare<[string, number, string], { name: string; state: "started" | "completed"; outcome: string | null }>(
        `SELECT name, state, outcome FROM jianmu_queue_journal WHERE run_id = ? AND iteration = ? AND call_id = ?`,
      )
      .get(key.runId, key.iteration, key.callId), true);
    if (!row) return undefined;
    return journalEntryOf(row, key, this.path);
  }

  forget(runId: string): void {
    this.open.prepare(`DELETE FROM jianmu_queue_journal WHERE run_id = ?`).run(runId);
  }

  // ---- the worker's half ----

  async registerAgents(agents: readonly string[]): Promise<void> {
    const db = this.open;
    const now = Date.now();
    db.transaction(() => {
      for (const name of agents) db.prepare(`INSERT INTO jianmu_queue_agents (name, last_seen) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET last_seen = excluded.last_seen`).run(name, now);
    }).immediate();
  }

  async claim(request: { owner: string; agents: readonly string[]; limit: number; leaseMs: number }): Promise<ClaimedRun[]> {
    const db = this.open;
    const agents = JSON.stringify(request.agents);
    return db.transaction(() => {
      const now = Date.now();
      const rows = db
        .prepare<[string, number, number, number], RunRow>(
          `SELECT * FROM jianmu_queue_runs r
           WHERE r.agent IN (SELECT value FROM json_each(?)) AND r.status IN ('queued', 'running', 'awaitingApproval')
             AND (r.owner IS NULL OR r.lease_until < ?)
             AND (r.wake_at <= ? OR EXISTS (SELECT 1 FROM jianmu_queue_inbox i WHERE i.run_id = r.run_id AND i.applied_at IS NULL))
           ORDER BY r.wake_at IS NULL, r.wake_at, r.created_at LIMIT ?`,
        )
        .all(agents, now, now, request.limit);
      const update = db.prepare(
        `UPDATE jianmu_queue_runs SET owner = ?, token = token + 1, lease_until = ?, wake_at = ?, status = 'running', updated_at = ? WHERE run_id = ?`,
      );
      return rows.map((row) => {
        update.run(request.owner, now + request.leaseMs, now, now, row.run_id);
        return { runId: row.run_id, agent: row.agent, token: row.token + 1, input: JSON.parse(row.input) as RunInput, ...(row.checkpoint !== null ? { checkpoint: row.checkpoint } : {}) };
      });
    }).immediate();
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
    return this.open.prepare(`UPDATE jianmu_queue_runs SET lease_until = ? WHERE run_id = ? AND token = ? AND owner IS NOT NULL`).run(Date.now() + leaseMs, runId, token).changes === 1;
  }

  async inbox(runId: string, afterId: number): Promise<InboxEvent[]> {
    return this.open
      .prepare<[string, number], { id: number; command: string }>(`SELECT id, command FROM jianmu_queue_inbox WHERE run_id = ? AND id > ? AND applied_at IS NULL ORDER BY id`)
      .all(runId, afterId)
      .map((row) => ({ id: row.id, command: JSON.parse(row.command) as RunCommand }));
  }

  private handBack(runId: string, token: number, set: string, values: unknown[], applyAll = false): boolean {
    const db = this.open;
    const delivered = applyAll ? Number.MAX_SAFE_INTEGER : this.fences.deliveredOf(runId);
    return db.transaction(() => {
      const now = Date.now();
      const changes = db.prepare(`UPDATE jianmu_queue_runs SET owner = NULL, lease_until = NULL, updated_at = ?, ${set} WHERE run_id = ? AND token = ?`).run(now, ...values, runId, token).changes;
      if (changes === 1) db.prepare(`UPDATE jianmu_queue_inbox SET applied_at = ? WHERE run_id = ? AND id <= ? AND applied_at IS NULL`).run(now, runId, delivered);
      return changes === 1;
    }).immediate();
  }

  async park(runId: string, token: number, wakeAt: number | undefined): Promise<boolean> {
    return this.handBack(runId, token, `status = 'awaitingApproval', wake_at = ?`, [wakeAt ?? null]);
  }

  async finish(runId: string, token: number, output: AgentOutput): Promise<boolean> {
    return this.handBack(runId, token, `status = ?, output = ?, wake_at = NULL, pending = '[]'`, [output.status, JSON.stringify(output)], true);
  }

  async release(runId: string, token: number): Promise<boolean> {
    return this.handBack(runId, token, `wake_at = ?`, [Date.now()]);
  }

  /**
   * SQLite tells no other process anything: workers and waiters poll. Within this process (a handler
   * and its embedded worker share the store), a submit, a send and an append are told at once.
   */
  subscribe(listener: (signal: QueueSignal) => void): () => void {
    this.local.add(listener);
    return () => this.local.delete(listener);
  }

  async appendRunEvents(runId: string, token: number, events: readonly RunEventInput[]): Promise<boolean> {
    const db = this.open;
    const appended = db
      .transaction(() => {
        if (this.row(runId)?.token !== token) return false;
        const last = db.prepare<[string], { n: number | null }>(`SELECT max(seq) AS n FROM jianmu_queue_events WHERE run_id = ?`).get(runId)?.n ?? 0;
        const insert = db.prepare(`INSERT INTO jianmu_queue_events (run_id, seq, type, data) VALUES (?, ?, ?, ?)`);
        events.forEach((event, i) => insert.run(runId, last + i + 1, event.type, JSON.stringify(event.data)));
        return true;
      })
      .immediate();
    if (appended) this.tell({ kind: "events", runId });
    return appended;
  }

  async runEventsAfter(runId: string, afterSeq: number, limit: number): Promise<StoredRunEvent[]> {
    const rows = this.open
      .prepare<[string, number, number], { seq: number; type: string; data: string }>(`SELECT seq, type, data FROM jianmu_queue_events WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?`)
      .all(runId, afterSeq, limit);
    return rows.map((row) => ({ seq: row.seq, type: row.type, data: JSON.parse(row.data) as unknown }));
  }

  async pruneRunEvents(finishedBefore: number): Promise<number> {
    const finished = `SELECT run_id FROM jianmu_queue_runs WHERE status IN ('succeeded', 'failed') AND updated_at < ?`;
    const runs = this.open.prepare<[number], { n: number }>(`SELECT count(DISTINCT run_id) AS n FROM jianmu_queue_events WHERE run_id IN (${finished})`).get(finishedBefore)?.n ?? 0;
    this.open.prepare(`DELETE FROM jianmu_queue_events WHERE run_id IN (${finished})`).run(finishedBefore);
    return runs;
  }
}
