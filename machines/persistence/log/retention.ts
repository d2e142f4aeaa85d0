/*
 * `keepCheckpoints` in the SQL stores: after a save, a run keeps its last N checkpoints, those a
 * fork starts from, and the keyframes the kept ones are compressed against (packing.ts). One query
 * for SQLite and PostgreSQL alike: a WITH clause naming `needed`, the ids to keep.
 */
export function pruneKeepingSql(checkpoints: string, runs: string, run: { key: string; id: string }, keep: string): string {
  return `WITH cutoff AS (SELECT coalesce((SELECT id FROM ${checkpoints} WHERE run_key = ${run.key} ORDER BY id DESC LIMIT 1 OFFSET ${keep} - 1), 0) AS id),
     kept AS (SELECT c.id, c.key_id, c.prev_key FROM ${checkpoints} c, cutoff WHERE c.run_key = ${run.key}
       AND (c.id >= cutoff.id OR c.id IN (SELECT fork_checkpoint FROM ${runs} WHERE fork_of = ${run.id}))),
     keys AS (SELECT key_id AS id FROM kept WHERE key_id IS NOT NULL),
     needed AS (
       SELECT id FROM kept
       UNION SELECT id FROM keys
       UNION SELECT prev_key FROM kept WHERE prev_key IS NOT NULL
       UNION SELECT k.prev_key FROM ${checkpoints} k JOIN keys ON k.id = keys.id WHERE k.run_key = ${run.key} AND k.prev_key IS NOT NULL)`;
}
