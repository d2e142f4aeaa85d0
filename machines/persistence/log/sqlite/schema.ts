/*
 * The one SQLite layout of jianmu's stores (layout 2): `SqliteCheckpointStore` and `SqliteRunStore`
 * open the same tables, so one file serves `runAgent` checkpoints and the run queue alike.
 *
 *   jianmu_runs         one row per run (`run_key`, never reused, is what checkpoints and streams
 *                       name it by: a short integer instead of its id in every row): the queue's columns (status, owner, lease, token, inbox
 *                       wake-up, output), the latest checkpoint (`head`) and its summary, the thread
 *                       it belongs to, the run it was forked from
 *   jianmu_checkpoints  every checkpoint of a run, in the order saved: a body holding the streams it refers
 *                       to with their counts and its skeleton (deflated against the run's keyframes,
 *                       packing.ts: `key_id` names the latest, a keyframe's `prev_key` the one before;
 *                       its state, status and time are in the skeleton)
 *   jianmu_streams      append-only lists of elements, each owned by one run, maybe starting with a
 *                       prefix of another (`base_id`, `base_count`)
 *   jianmu_items        one element per row (a message, a call-log entry...), as JSON text
 *   jianmu_journal      the tool journal, one row per call
 *   jianmu_inbox, jianmu_agents   the queue's approvals, rejections and cancels; the agents workers run
 *   jianmu_events       a queued run's stream of events for followers in any process (queue/run-events.ts)
 *   jianmu_blobs        large images and files, once per run and content (machines/persistence/blobs.ts;
 *                       created by its table class, sqlite-blobs.ts)
 *
 * The version lives in `PRAGMA user_version`; `jianmu_queue_meta` keeps saying it too, so that a
 * SqliteRunStore of the release before refuses the file instead of starting an empty queue in it.
 * Layout 3 is layout 2 with a claim that reads due runs alone (`wake_at`, which `send` moves), in the
 * order it takes them: `LAYOUT_3_STEP` brings a layout-2 file there.
 */

export const LAYOUT_VERSION = 3;

/** The claim's index: each agent's active runs in the order a claim takes them (`wake_at`, then `created_at`). */
const CLAIMABLE_INDEX = `CREATE INDEX jianmu_runs_claimable ON jianmu_runs (agent, wake_at, created_at) WHERE status IN ('queued', 'running', 'awaitingApproval');`;

export const LAYOUT = `
CREATE TABLE jianmu_runs (
  run_key INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL UNIQUE, agent TEXT NOT NULL, input TEXT NOT NULL DEFAULT '{}',
  status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'awaitingApproval', 'succeeded', 'failed')),
  owner TEXT, token INTEGER NOT NULL DEFAULT 0, lease_until INTEGER, wake_at INTEGER,
  pending TEXT NOT NULL DEFAULT '[]', output TEXT,
  head INTEGER, machine TEXT, state TEXT, iteration INTEGER NOT NULL DEFAULT 0, saved_at INTEGER,
  thread_id TEXT, thread_seq INTEGER, seed TEXT,
  fork_of TEXT, fork_checkpoint INTEGER, inherit TEXT,
  created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL
);
${CLAIMABLE_INDEX}
CREATE INDEX jianmu_runs_created ON jianmu_runs (created_at);
CREATE INDEX jianmu_runs_thread ON jianmu_runs (thread_id, thread_seq) WHERE thread_id IS NOT NULL;
CREATE UNIQUE INDEX jianmu_runs_thread_active ON jianmu_runs (thread_id) WHERE thread_id IS NOT NULL AND status IN ('queued', 'running', 'awaitingApproval');
CREATE INDEX jianmu_runs_forks ON jianmu_runs (fork_of) WHERE fork_of IS NOT NULL;
CREATE TABLE jianmu_checkpoints (id INTEGER PRIMARY KEY AUTOINCREMENT, run_key INTEGER NOT NULL, key_id INTEGER, prev_key INTEGER, body BLOB NOT NULL);
CREATE INDEX jianmu_checkpoints_run ON jianmu_checkpoints (run_key, id);
CREATE TABLE jianmu_streams (id INTEGER PRIMARY KEY AUTOINCREMENT, run_key INTEGER NOT NULL, base_id INTEGER, base_count INTEGER);
CREATE INDEX jianmu_streams_run ON jianmu_streams (run_key);
CREATE INDEX jianmu_streams_base ON jianmu_streams (base_id) WHERE base_id IS NOT NULL;
CREATE TABLE jianmu_items (stream_id INTEGER NOT NULL, seq INTEGER NOT NULL, body TEXT NOT NULL, PRIMARY KEY (stream_id, seq)) WITHOUT ROWID;
CREATE TABLE jianmu_journal (
  run_id TEXT NOT NULL, iteration INTEGER NOT NULL, call_id TEXT NOT NULL, name TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('started', 'completed')), outcome TEXT, updated_at INTEGER NOT NULL,
  PRIMARY KEY (run_id, iteration, call_id)
) WITHOUT ROWID;
CREATE TABLE jianmu_inbox (
  id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL, dedupe_key TEXT NOT NULL, command TEXT NOT NULL,
  created_at INTEGER NOT NULL, applied_at INTEGER, UNIQUE (run_id, dedupe_key)
);
CREATE TABLE jianmu_agents (name TEXT PRIMARY KEY, last_seen INTEGER NOT NULL);
CREATE TABLE jianmu_events (run_id TEXT NOT NULL, seq INTEGER NOT NULL, type TEXT NOT NULL, data TEXT NOT NULL, PRIMARY KEY (run_id, seq)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS jianmu_queue_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO jianmu_queue_meta (key, value) VALUES ('layout', '${LAYOUT_VERSION}') ON CONFLICT (key) DO UPDATE SET value = excluded.value;`;

/**
 * A run with an event in its inbox is due now: before layout 3 the claim looked at the inbox, from it
 * on at `wake_at` alone, which `send` sets. `@now`: the clock in ms.
 */
export const DUE_BY_INBOX = `
UPDATE jianmu_runs SET wake_at = @now
  WHERE status IN ('queued', 'running', 'awaitingApproval') AND (wake_at IS NULL OR wake_at > @now)
    AND EXISTS (SELECT 1 FROM jianmu_inbox i WHERE i.run_id = jianmu_runs.run_id AND i.applied_at IS NULL);`;
/** From layout 2 to 3: those runs due, and the claim's index rebuilt in the order a claim takes them. */
export const LAYOUT_3_STEP = `${DUE_BY_INBOX}
DROP INDEX jianmu_runs_claimable;
${CLAIMABLE_INDEX}
INSERT INTO jianmu_queue_meta (key, value) VALUES ('layout', '3') ON CONFLICT (key) DO UPDATE SET value = excluded.value;`;

/** A run row as the stores read it. */
export interface SqliteRunRow {
  run_key: number;
  run_id: string;
  agent: string;
  input: string;
  status: "queued" | "running" | "awaitingApproval" | "succeeded" | "failed";
  owner: string | null;
  token: number;
  lease_until: number | null;
  wake_at: number | null;
  pending: string;
  output: string | null;
  head: number | null;
  machine: string | null;
  state: string | null;
  iteration: number;
  saved_at: number | null;
  thread_id: string | null;
  thread_seq: number | null;
  /** A thread's run: the thread's run before it, whose last checkpoint its first save builds on. */
  seed: string | null;
  fork_of: string | null;
  fork_checkpoint: number | null;
  inherit: string | null;
  created_at: number;
  updated_at: number;
}

