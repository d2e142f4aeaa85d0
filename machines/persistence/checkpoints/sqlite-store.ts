import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import Database from "better-sqlite3";
import { z } from "zod";
import type { ToolOutcome } from "../../../actors/tool-executor.js";
import type { JournalEntry, JournalKey, ToolJournal } from "../../../actors/tool-journal.js";
import { readPersisted, type PersistedAgent, type RunStatus } from "../persistence.js";
import { CheckpointError, checkRecordId, journalEntryOf, summaryOf, type CheckpointStore, type CheckpointSummary } from "./store.js";
import type { BlobStore, StoredBlob } from "../blobs.js";
import { SqliteBlobTable } from "./sqlite-blobs.js";

const OptionsSchema = z
  .object({
    /** The database file (created with its directory when missing), or ":memory:". */
    path: z.string().min(1, "must name the database file, e.g. .jianmu/runs.db"),
    /** How long a write waits for another process holding the lock. */
    busyTimeoutMs: z.number().int().min(0).default(5_000),
  })
  .strict();
export type SqliteCheckpointStoreOptions = z.input<typeof OptionsSchema>;

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

/** The layout this code writes; a database with a higher number was written by a newer jianmu. */
const SCHEMA_VERSION = 1;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS jianmu_checkpoints (
  run_id    TEXT PRIMARY KEY,
  machine   TEXT NOT NULL,
  state     TEXT NOT NULL,
  status    TEXT NOT NULL,
  iteration INTEGER NOT NULL,
  saved_at  INTEGER NOT NULL,
  body      TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS jianmu_tool_journal (
  run_id     TEXT NOT NULL,
  iteration  INTEGER NOT NULL,
  call_id    TEXT NOT NULL,
  name       TEXT NOT NULL,
  state      TEXT NOT NULL CHECK (state IN ('started', 'completed')),
  outcome    TEXT,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (run_id, iteration, call_id)
);`;

interface SummaryRow {
  run_id: string;
  machine: string;
  state: string;
  status: RunStatus;
  iteration: number;
  saved_at: number;
}

interface JournalRow {
  name: string;
  state: "started" | "completed";
  outcome: string | null;
}

/**
 * The embedded default store: checkpoints (one row per run, the snapshot as JSON text) and the
 * tool journal (one row per call) in one SQLite file. WAL mode with full sync: a journal row is on
 * disk before the tool's result is used, and several processes can share the file.
 * Everything is synchronous, so a checkpoint is written before the state it records moves on.
 */
export class SqliteCheckpointStore implements CheckpointStore, ToolJournal, BlobStore {
  readonly path: string;
  private readonly db: Database.Database;
  private readonly statements;
  /** Large images and files of each run, stored once (machines/persistence/blobs.ts). */
  private readonly blobs: SqliteBlobTable;

  constructor(options: SqliteCheckpointStoreOptions) {
    const parsed = OptionsSchema.safeParse(options);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw new CheckpointError("(none)", `SqliteCheckpointStore: options.${issue.path.map(String).join(".") || "(all)"} ${issue.message} (options are { path, busyTimeoutMs? })`);
    }
    const { path, busyTimeoutMs } = parsed.data;
    this.path = path;
    try {
      if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
      this.db = new Database(path, { timeout: busyTimeoutMs });
    } catch (error) {
      throw new CheckpointError("(none)", `SqliteCheckpointStore: cannot open ${path}: ${openFailure(error)}`, { cause: error });
    }
    try {
      this.db.pragma("journal_mode = WAL");
      // FULL: a committed journal row survives a power cut, not only a killed process.
      this.db.pragma("synchronous = FULL");
      const version = this.db.pragma("user_version", { simple: true }) as number;
      if (version > SCHEMA_VERSION) {
        throw new Error(`it was written by a newer jianmu (database layout ${version}, this one knows ${SCHEMA_VERSION}); open it with that version`);
      }
      this.db.exec(SCHEMA);
      if (version < SCHEMA_VERSION) this.db.pragma(`user_version = ${SCHEMA_VERSION}`);
    } catch (error) {
      this.db.close();
      throw new CheckpointError("(none)", `SqliteCheckpointStore: ${path}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    }
    this.statements = this.prepare();
    this.blobs = new SqliteBlobTable(this.db, "jianmu_blobs");
  }

  private prepare() {
    const db = this.db;
    return {
      save: db.prepare<[string, string, string, string, number, number, string]>(
        `INSERT INTO jianmu_checkpoints (run_id, machine, state, status, iteration, saved_at, body) VALUES (?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (run_id) DO UPDATE SET machine = excluded.machine, state = excluded.state, status = excluded.status,
           iteration = excluded.iteration, saved_at = excluded.saved_at, body = excluded.body`,
      ),
      load: db.prepare<[string], { body: string }>(`SELECT body FROM jianmu_checkpoints WHERE run_id = ?`),
      list: db.prepare<[], SummaryRow>(
        `SELECT run_id, machine, state, status, iteration, saved_at FROM jianmu_checkpoints ORDER BY saved_at DESC, run_id`,
      ),
      deleteCheckpoint: db.prepare<[string]>(`DELETE FROM jianmu_checkpoints WHERE run_id = ?`),
      started: db.prepare<[string, number, string, string, number]>(
        `INSERT INTO jianmu_tool_journal (run_id, iteration, call_id, name, state, outcome, updated_at) VALUES (?, ?, ?, ?, 'started', NULL, ?)
         ON CONFLICT (run_id, iteration, call_id) DO NOTHING`,
      ),
      completed: db.prepare<[string, number, string, string, string, number]>(
        `INSERT INTO jianmu_tool_journal (run_id, iteration, call_id, name, state, outcome, updated_at) VALUES (?, ?, ?, ?, 'completed', ?, ?)
         ON CONFLICT (run_id, iteration, call_id) DO UPDATE SET name = excluded.name, state = 'completed', outcome = excluded.outcome, updated_at = excluded.updated_at WHERE state = 'started'`,
      ),
      lookup: db.prepare<[string, number, string], JournalRow>(
        `SELECT name, state, outcome FROM jianmu_tool_journal WHERE run_id = ? AND iteration = ? AND call_id = ?`,
      ),
      forget: db.prepare<[string]>(`DELETE FROM jianmu_tool_journal WHERE run_id = ?`),
    };
  }

  save(runId: string, record: PersistedAgent): void {
    checkRecordId(runId, record);
    const s = summaryOf(record);
    this.statements.save.run(runId, s.machine, s.state, s.status, s.iteration, s.savedAt, JSON.stringify(record));
  }

  load(runId: string): PersistedAgent | undefined {
    const row = this.statements.load.get(runId);
    if (!row) return undefined;
    return readPersisted(row.body);
  }

  list(): CheckpointSummary[] {
    return this.statements.list.all().map((row) => ({
      runId: row.run_id,
      machine: row.machine,
      state: row.state,
      status: row.status,
      iteration: row.iteration,
      savedAt: row.saved_at,
    }));
  }

  delete(runId: string): boolean {
    return this.db.transaction(() => {
      this.statements.forget.run(runId);
      this.blobs.forget(runId);
      return this.statements.deleteCheckpoint.run(runId).changes > 0;
    })();
  }

  putBlob(runId: string, sha256: string, blob: StoredBlob): void {
    this.blobs.put(runId, sha256, blob);
  }

  getBlob(runId: string, sha256: string): StoredBlob | undefined {
    return this.blobs.get(runId, sha256);
  }

  /** An atomic claim: insert-if-absent, so of two processes sharing the file only one wins. */
  started(key: JournalKey, name: string): boolean {
    return this.statements.started.run(key.runId, key.iteration, key.callId, name, Date.now()).changes === 1;
  }

  completed(key: JournalKey, outcome: ToolOutcome): void {
    this.statements.completed.run(key.runId, key.iteration, key.callId, outcome.name, JSON.stringify(outcome), Date.now());
  }

  lookup(key: JournalKey): JournalEntry | undefined {
    const row = this.statements.lookup.get(key.runId, key.iteration, key.callId);
    if (!row) return undefined;
    return journalEntryOf(row, key, this.path);
  }

  forget(runId: string): void {
    this.statements.forget.run(runId);
  }

  /** Close the database (idempotent). The store cannot be used afterwards. */
  close(): void {
    if (this.db.open) this.db.close();
  }
}
