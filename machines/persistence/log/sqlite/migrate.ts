import type Database from "better-sqlite3";
import { readPersisted, type PersistedAgent } from "../../persistence.js";
import { DUE_BY_INBOX, LAYOUT, LAYOUT_3_STEP, LAYOUT_VERSION } from "./schema.js";

/*
 * Opening a file written by an earlier release. Layout 1 came in two shapes, possibly in one file:
 * the checkpoint store's (`jianmu_checkpoints` with one row per run and the whole snapshot as JSON,
 * `jianmu_tool_journal`; `PRAGMA user_version = 1`) and the run queue's (`jianmu_queue_runs` with the
 * snapshot in a column, `jianmu_queue_inbox`, `jianmu_queue_journal`, `jianmu_queue_agents`,
 * `jianmu_queue_meta` layout 1). Both move into layout 2 in one transaction: every run keeps its
 * status, queue columns, journal and inbox, and its one checkpoint becomes the first of its log.
 */

const tableExists = (db: Database.Database, name: string) => db.prepare<[string]>(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?`).get(name) !== undefined;

/** Stores one migrated checkpoint as the run's first (the log's own write path, so the result is what a save would have made). */
export type WriteMigrated = (runId: string, record: PersistedAgent) => void;

interface V1QueueRun {
  run_id: string;
  agent: string;
  input: string;
  status: string;
  owner: string | null;
  token: number;
  lease_until: number | null;
  wake_at: number | null;
  checkpoint: string | null;
  pending: string;
  output: string | null;
  created_at: number;
  updated_at: number;
}

interface V1Checkpoint {
  run_id: string;
  machine: string;
  status: string;
  saved_at: number;
  body: string;
}

function readOld(runId: string, text: string, where: string): PersistedAgent {
  try {
    return readPersisted(text);
  } catch (error) {
    throw new Error(`the checkpoint of run ${runId} (${where}, written by an earlier jianmu) cannot be read (${error instanceof Error ? error.message : String(error)}); delete that row or restore a backup, then open the file again`);
  }
}

function migrateQueue(db: Database.Database, write: WriteMigrated): void {
  const insert = db.prepare(
    `INSERT INTO jianmu_runs (run_id, agent, input, status, owner, token, lease_until, wake_at, pending, output, created_at, updated_at)
     VALUES (@run_id, @agent, @input, @status, @owner, @token, @lease_until, @wake_at, @pending, @output, @created_at, @updated_at)`,
  );
  for (const row of db.prepare<[], V1QueueRun>(`SELECT * FROM jianmu_queue_runs ORDER BY created_at, rowid`).all()) {
    insert.run(row);
    if (row.checkpoint !== null) write(row.run_id, readOld(row.run_id, row.checkpoint, "jianmu_queue_runs"));
    // The pending approvals and status stay as the queue recorded them (a save sets them from the record).
    db.prepare(`UPDATE jianmu_runs SET status = ?, pending = ?, updated_at = ? WHERE run_id = ?`).run(row.status, row.pending, row.updated_at, row.run_id);
  }
  db.exec(`INSERT INTO jianmu_inbox (id, run_id, dedupe_key, command, created_at, applied_at) SELECT id, run_id, dedupe_key, command, created_at, applied_at FROM jianmu_queue_inbox`);
  db.exec(`INSERT INTO jianmu_agents (name, last_seen) SELECT name, last_seen FROM jianmu_queue_agents`);
  db.exec(`INSERT OR IGNORE INTO jianmu_journal SELECT run_id, iteration, call_id, name, state, outcome, updated_at FROM jianmu_queue_journal`);
  db.exec(`DROP TABLE jianmu_queue_runs; DROP TABLE jianmu_queue_inbox; DROP TABLE jianmu_queue_journal; DROP TABLE jianmu_queue_agents;`);
}

function migrateCheckpoints(db: Database.Database, write: WriteMigrated): void {
  const exists = db.prepare<[string]>(`SELECT 1 FROM jianmu_runs WHERE run_id = ?`);
  const insert = db.prepare(`INSERT INTO jianmu_runs (run_id, agent, status, created_at, updated_at) VALUES (?, ?, ?, ?, ?)`);
  for (const row of db.prepare<[], V1Checkpoint>(`SELECT run_id, machine, status, saved_at, body FROM jianmu_v1_checkpoints ORDER BY saved_at, run_id`).all()) {
    // A file both stores used: the queue's copy of a run wins (it is the one workers continue).
    if (exists.get(row.run_id)) continue;
    insert.run(row.run_id, row.machine, row.status, row.saved_at, row.saved_at);
    write(row.run_id, readOld(row.run_id, row.body, "jianmu_checkpoints"));
  }
  db.exec(`INSERT OR IGNORE INTO jianmu_journal SELECT run_id, iteration, call_id, name, state, outcome, updated_at FROM jianmu_tool_journal`);
  db.exec(`DROP TABLE jianmu_v1_checkpoints; DROP TABLE jianmu_tool_journal;`);
}

/** The layout a file is at: its user_version, or the queue's own record of it. */
export function layoutOf(db: Database.Database): number {
  const version = db.pragma("user_version", { simple: true }) as number;
  if (version !== 0 || !tableExists(db, "jianmu_queue_meta")) return version;
  const row = db.prepare<[], { value: string }>(`SELECT value FROM jianmu_queue_meta WHERE key = 'layout'`).get();
  return row ? Number(row.value) : 0;
}

/**
 * Bring the file to the latest layout (creating it when empty): a file before layout 2 is rewritten
 * into it, a layout-2 file takes `LAYOUT_3_STEP`. Runs in one IMMEDIATE transaction, so two processes
 * opening one old file migrate it once; a failure leaves the file as it was.
 */
export function migrate(db: Database.Database, write: WriteMigrated): void {
  const check = (version: number) => {
    if (version > LAYOUT_VERSION) throw new Error(`it was written by a newer jianmu (database layout ${version}, this one knows ${LAYOUT_VERSION}); open it with that version`);
  };
  check(layoutOf(db));
  if (layoutOf(db) === LAYOUT_VERSION) return;
  db.transaction(() => {
    const version = layoutOf(db);
    check(version);
    if (version === LAYOUT_VERSION) return;
    // SQLite's exec takes no parameters: the clock goes in as a number.
    const now = String(Date.now());
    if (version === 2) {
      db.exec(LAYOUT_3_STEP.replaceAll("@now", now));
      db.pragma(`user_version = ${LAYOUT_VERSION}`);
      return;
    }
    const oldCheckpoints = tableExists(db, "jianmu_checkpoints");
    if (oldCheckpoints) db.exec(`ALTER TABLE jianmu_checkpoints RENAME TO jianmu_v1_checkpoints`);
    db.exec(LAYOUT);
    if (tableExists(db, "jianmu_queue_runs")) {
      migrateQueue(db, write);
      db.exec(DUE_BY_INBOX.replaceAll("@now", now));
    }
    if (oldCheckpoints) migrateCheckpoints(db, write);
    // The queue's blob table of the layout before: one table for both stores now.
    if (tableExists(db, "jianmu_queue_blobs")) {
      db.exec(`CREATE TABLE IF NOT EXISTS jianmu_blobs (run_id TEXT NOT NULL, sha256 TEXT NOT NULL, media_type TEXT NOT NULL, data BLOB NOT NULL, PRIMARY KEY (run_id, sha256));
        INSERT OR IGNORE INTO jianmu_blobs SELECT run_id, sha256, media_type, data FROM jianmu_queue_blobs; DROP TABLE jianmu_queue_blobs;`);
    }
    db.pragma(`user_version = ${LAYOUT_VERSION}`);
  }).immediate();
}
