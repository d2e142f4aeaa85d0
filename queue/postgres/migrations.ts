import type pg from "pg";
import { readPersisted, type PersistedAgent } from "../../machines/persistence/persistence.js";
import { RunQueueError } from "../errors.js";

/**
 * The tables, as numbered migrations. A database records the versions it has; `connect` applies the
 * missing ones in one transaction under an advisory lock, so processes connecting at once migrate once.
 * Never edit a released migration: add the next one.
 */
/** Migration 4 moves each run's one checkpoint into its log: the store's own write path does it (see PostgresRunStore.connect). */
export type ConvertCheckpoint = (query: (text: string, values?: unknown[]) => Promise<unknown>, runId: string, record: PersistedAgent) => Promise<void>;

export interface Migration {
  version: number;
  sql: (schema: string) => string;
  /** Work after the statements, in the same transaction (data only code can transform). */
  after?: (client: pg.ClientBase, schema: string, convert: ConvertCheckpoint) => Promise<void>;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    sql: (s) => `
CREATE TABLE ${s}.runs (
  run_id      text PRIMARY KEY,
  agent       text NOT NULL,
  input       jsonb NOT NULL DEFAULT '{}',
  status      text NOT NULL CHECK (status IN ('queued', 'running', 'awaitingApproval', 'succeeded', 'failed')),
  owner       text,
  token       bigint NOT NULL DEFAULT 0,
  lease_until bigint,
  wake_at     bigint,
  machine     text,
  checkpoint  text,
  state       text,
  iteration   integer NOT NULL DEFAULT 0,
  saved_at    bigint,
  pending     jsonb NOT NULL DEFAULT '[]',
  output      jsonb,
  created_at  bigint NOT NULL,
  updated_at  bigint NOT NULL
);
CREATE INDEX runs_claimable ON ${s}.runs (agent, wake_at) WHERE status IN ('queued', 'running', 'awaitingApproval');
CREATE INDEX runs_created ON ${s}.runs (created_at DESC);
CREATE TABLE ${s}.inbox (
  id         bigserial PRIMARY KEY,
  run_id     text NOT NULL REFERENCES ${s}.runs (run_id) ON DELETE CASCADE,
  dedupe_key text NOT NULL,
  command    jsonb NOT NULL,
  created_at bigint NOT NULL,
  applied_at bigint,
  UNIQUE (run_id, dedupe_key)
);
CREATE INDEX inbox_unapplied ON ${s}.inbox (run_id) WHERE applied_at IS NULL;
CREATE TABLE ${s}.tool_journal (
  run_id     text NOT NULL,
  iteration  integer NOT NULL,
  call_id    text NOT NULL,
  name       text NOT NULL,
  state      text NOT NULL CHECK (state IN ('started', 'completed')),
  outcome    jsonb,
  updated_at bigint NOT NULL,
  PRIMARY KEY (run_id, iteration, call_id)
);
CREATE TABLE ${s}.agents (
  name      text PRIMARY KEY,
  last_seen bigint NOT NULL
);`,
  },
  {
    // Large images and files of a run's checkpoints, kept once per run and content (machines/persistence/blobs.ts).
    version: 2,
    sql: (s) => `
CREATE TABLE ${s}.blobs (
  run_id     text NOT NULL,
  sha256     text NOT NULL,
  media_type text NOT NULL,
  data       bytea NOT NULL,
  PRIMARY KEY (run_id, sha256)
);`,
  },
  {
    // JSON in text columns: jsonb refuses "\u0000" and unpaired surrogates, which models and tools
    // produce (queue/storable.ts); text holds JSON.stringify's escapes as they are.
    // Claims by wake_at alone: send() sets it, so a parked run (wake_at NULL or a future deadline)
    // is outside the claim's index range instead of scanned for an inbox event on every claim.
    version: 3,
    sql: (s) => `
ALTER TABLE ${s}.runs
  ALTER COLUMN input DROP DEFAULT, ALTER COLUMN input TYPE text USING input::text, ALTER COLUMN input SET DEFAULT '{}',
  ALTER COLUMN pending DROP DEFAULT, ALTER COLUMN pending TYPE text USING pending::text, ALTER COLUMN pending SET DEFAULT '[]',
  ALTER COLUMN output TYPE text USING output::text;
ALTER TABLE ${s}.inbox ALTER COLUMN command TYPE text USING command::text;
ALTER TABLE ${s}.tool_journal ALTER COLUMN outcome TYPE text USING outcome::text;
UPDATE ${s}.runs r SET wake_at = (extract(epoch from clock_timestamp()) * 1000)::bigint
  WHERE r.status IN ('queued', 'running', 'awaitingApproval')
    AND EXISTS (SELECT 1 FROM ${s}.inbox i WHERE i.run_id = r.run_id AND i.applied_at IS NULL);
DROP INDEX ${s}.runs_claimable;
CREATE INDEX runs_due ON ${s}.runs (agent, wake_at) WHERE status IN ('queued', 'running', 'awaitingApproval') AND wake_at IS NOT NULL;`,
  },
  {
    // One log per run: every checkpoint kept, the conversation stored once (streams of elements), forks and threads.
    version: 4,
    sql: (s) => `
-- run_key: how checkpoints and streams name their run (a 4-byte integer instead of its id in every row); never reused.
ALTER TABLE ${s}.runs
  ADD COLUMN run_key         serial UNIQUE,
  ADD COLUMN head            bigint,
  ADD COLUMN thread_id       text,
  ADD COLUMN thread_seq      integer,
  ADD COLUMN seed            text,
  ADD COLUMN fork_of         text,
  ADD COLUMN fork_checkpoint bigint,
  ADD COLUMN inherit         text;
-- Outcomes are journaled deflated (machines/persistence/log/journal-packing.ts); earlier ones stay as text in outcome.
ALTER TABLE ${s}.tool_journal ADD COLUMN packed bytea;
CREATE UNIQUE INDEX runs_thread_active ON ${s}.runs (thread_id) WHERE thread_id IS NOT NULL AND status IN ('queued', 'running', 'awaitingApproval');
CREATE INDEX runs_thread ON ${s}.runs (thread_id, thread_seq) WHERE thread_id IS NOT NULL;
CREATE INDEX runs_forks ON ${s}.runs (fork_of) WHERE fork_of IS NOT NULL;
-- Every lookup of a checkpoint names its run: one index, by run then id.
CREATE TABLE ${s}.checkpoints (
  run_key   integer NOT NULL,
  id        bigserial,
  key_id    bigint,
  prev_key  bigint,
  body      bytea NOT NULL,
  PRIMARY KEY (run_key, id)
);
-- Streams are few (a handful per run): 4-byte ids keep each element's row and index entry short.
CREATE TABLE ${s}.streams (
  id         serial PRIMARY KEY,
  run_key    integer NOT NULL,
  base_id    integer,
  base_count integer
);
CREATE INDEX streams_run ON ${s}.streams (run_key);
CREATE INDEX streams_base ON ${s}.streams (base_id) WHERE base_id IS NOT NULL;
CREATE TABLE ${s}.items (
  stream_id integer NOT NULL,
  seq       integer NOT NULL,
  body      text NOT NULL,
  PRIMARY KEY (stream_id, seq)
);`,
    after: async (client, s, convert) => {
      const { rows } = await client.query<{ run_id: string; checkpoint: string; updated_at: string }>(
        `SELECT run_id, checkpoint, updated_at FROM ${s}.runs WHERE checkpoint IS NOT NULL ORDER BY created_at, run_id`,
      );
      for (const row of rows) {
        let record: PersistedAgent;
        try {
          record = readPersisted(row.checkpoint);
        } catch (error) {
          throw new Error(`the checkpoint of run ${row.run_id} (written by an earlier jianmu) cannot be read (${error instanceof Error ? error.message : String(error)}); delete that row or restore a backup, then connect again`);
        }
        await convert((text, values) => client.query(text, values), row.run_id, record);
        // A run's last change is still the one it had; moving it into the log is not one.
        await client.query(`UPDATE ${s}.runs SET updated_at = $2 WHERE run_id = $1`, [row.run_id, row.updated_at]);
      }
      await client.query(`ALTER TABLE ${s}.runs DROP COLUMN checkpoint`);
    },
  },
  {
    // A run's stream of events for followers in any process (queue/run-events.ts); pruned after the run ends.
    version: 5,
    sql: (s) => `
CREATE TABLE ${s}.run_events (
  run_id text NOT NULL,
  seq    integer NOT NULL,
  type   text NOT NULL,
  data   text NOT NULL,
  PRIMARY KEY (run_id, seq)
);`,
  },
  {
    // A tool result stored once (machines/persistence/log/journal-packing.ts): an outcome's content (deflated, with its hash)
    // until a save stores the tool message with the same text, then the place of that message instead.
    // Rows written before keep their whole outcome in packed (or outcome) and read as before.
    version: 6,
    sql: (s) => `
ALTER TABLE ${s}.tool_journal ADD COLUMN content bytea, ADD COLUMN content_sha bytea, ADD COLUMN item_stream integer, ADD COLUMN item_seq integer;`,
  },
  {
    // Each agent's due runs in the order a claim takes them (wake_at, then created_at): a claim reads the few it
    // takes, however long the backlog, instead of reading and sorting every due run (statements.ts, dueRuns).
    version: 7,
    sql: (s) => `
DROP INDEX ${s}.runs_due;
CREATE INDEX runs_due ON ${s}.runs (agent, wake_at, created_at) WHERE status IN ('queued', 'running', 'awaitingApproval') AND wake_at IS NOT NULL;`,
  },
];

export const LATEST_VERSION = MIGRATIONS[MIGRATIONS.length - 1]!.version;

/** A 64-bit advisory lock key per schema (hashtext is stable across PostgreSQL versions we support). */
const LOCK = `SELECT pg_advisory_xact_lock(hashtext('jianmu.migrate'), hashtext($1))`;

/** Bring the schema to LATEST_VERSION. Throws (having changed nothing) when the database is newer or a statement fails. */
async function versionOf(client: pg.ClientBase, schema: string): Promise<number> {
  const { rows } = await client.query<{ table: string | null }>(`SELECT to_regclass($1) AS table`, [`${schema}.schema_migrations`]);
  if (!rows[0]?.table) return 0;
  const found = await client.query<{ version: number | null }>(`SELECT max(version) AS version FROM ${schema}.schema_migrations`);
  return found.rows[0]?.version ?? 0;
}

function checkNotNewer(schema: string, version: number): void {
  if (version > LATEST_VERSION) {
    throw Object.assign(new Error(`schema ${schema} is at version ${version}, written by a newer jianmu (this one knows ${LATEST_VERSION}); upgrade jianmu here`), { code: "JIANMU_NEWER" });
  }
}

/** For `connect({ create: false })`: the schema's tables must already be there; nothing is created. */
export async function requireTables(client: pg.ClientBase, schema: string): Promise<void> {
  const version = await versionOf(client, schema);
  checkNotNewer(schema, version);
  if (version === 0) {
    throw new RunQueueError("schema", `there is no run queue in schema ${schema} here (nothing was created): check --schema / the schema option, or start a worker (or submit a run) on it first`);
  }
}

export async function migrate(client: pg.ClientBase, schema: string, convert: ConvertCheckpoint): Promise<{ from: number; to: number }> {
  // Up to date already: no DDL, no lock (a role with rights on the tables only, not on the database, connects).
  const current = await versionOf(client, schema);
  checkNotNewer(schema, current);
  if (current === LATEST_VERSION) return { from: current, to: current };
  await client.query("BEGIN");
  try {
    await client.query(LOCK, [schema]);
    const exists = await client.query(`SELECT 1 FROM pg_namespace WHERE nspname = $1`, [schema]);
    if (exists.rowCount === 0) await client.query(`CREATE SCHEMA ${schema}`);
    await client.query(`CREATE TABLE IF NOT EXISTS ${schema}.schema_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`);
    const from = await versionOf(client, schema);
    checkNotNewer(schema, from);
    for (const migration of MIGRATIONS) {
      if (migration.version <= from) continue;
      await client.query(migration.sql(schema));
      await migration.after?.(client, schema, convert);
      await client.query(`INSERT INTO ${schema}.schema_migrations (version) VALUES ($1)`, [migration.version]);
    }
    await client.query("COMMIT");
    return { from, to: LATEST_VERSION };
  } catch (error) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw error;
  }
}
