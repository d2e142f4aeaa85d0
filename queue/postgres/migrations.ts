import type pg from "pg";

/**
 * The tables, as numbered migrations. A database records the versions it has; `connect` applies the
 * missing ones in one transaction under an advisory lock, so processes connecting at once migrate once.
 * Never edit a released migration: add the next one.
 */
export const MIGRATIONS: readonly { version: number; sql: (schema: string) => string }[] = [
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
    // A run's stream of events for followers in any process (queue/run-events.ts); pruned after the run ends.
    version: 4,
    sql: (s) => `
CREATE TABLE ${s}.run_events (
  run_id text NOT NULL,
  seq    integer NOT NULL,
  type   text NOT NULL,
  data   text NOT NULL,
  PRIMARY KEY (run_id, seq)
);`,
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

export async function migrate(client: pg.ClientBase, schema: string): Promise<{ from: number; to: number }> {
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
      await client.query(`INSERT INTO ${schema}.schema_migrations (version) VALUES ($1)`, [migration.version]);
    }
    await client.query("COMMIT");
    return { from, to: LATEST_VERSION };
  } catch (error) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw error;
  }
}
