import type Database from "better-sqlite3";
import { CheckpointError } from "../../checkpoints/store.js";
import type { PackedCheckpoint } from "../packing.js";
import { checkpointText, dictionaryOf, type KnownKeyframe, type StoredCheckpoint } from "../stored-checkpoint.js";

interface Row {
  id: number;
  run_id: string;
  key_id: number | null;
  prev_key: number | null;
  body: Buffer;
}

/** A checkpoint with its run's id (rows name their run by its key; a deleted run's keyframes read as run ""). */
const SELECT = `SELECT c.*, coalesce(r.run_id, '') AS run_id FROM jianmu_checkpoints c LEFT JOIN jianmu_runs r ON r.run_key = c.run_key`;

const stored = (row: Row): StoredCheckpoint => ({ id: row.id, runId: row.run_id, keyId: row.key_id, prevKey: row.prev_key, body: row.body });

/** The checkpoint rows of a SQLite store: read, decompressed (keyframes' texts kept at hand), written. */
export class SqliteCheckpointRows {
  private readonly keyframes = new Map<number, KnownKeyframe>();

  constructor(
    private readonly sql: (text: string) => Database.Statement,
    private readonly where: string,
  ) {}

  /** Checkpoint `id` (of run `runKey` when given). */
  get(id: number, runKey?: number): StoredCheckpoint | undefined {
    const row = (runKey === undefined ? this.sql(`${SELECT} WHERE c.id = ?`).get(id) : this.sql(`${SELECT} WHERE c.id = ? AND c.run_key = ?`).get(id, runKey)) as Row | undefined;
    return row ? stored(row) : undefined;
  }

  /**
   * The run's checkpoint `id` (its head when null) with the run's head, and the keyframes it
   * is compressed against, in one statement: a load on a store opened afresh reads no row twice.
   */
  ofRun(runId: string, id: number | null): { head: number | null; row: StoredCheckpoint } | undefined {
    const found = this.sql(
      `SELECT r.head, c.id, c.key_id, c.prev_key, c.body, k.prev_key AS k_prev, k.body AS k_body, p.id AS p_id, p.prev_key AS p_prev, p.body AS p_body
       FROM jianmu_runs r JOIN jianmu_checkpoints c ON c.id = coalesce(?, r.head) AND c.run_key = r.run_key
       LEFT JOIN jianmu_checkpoints k ON k.id = c.key_id AND k.key_id IS NULL
       LEFT JOIN jianmu_checkpoints p ON p.id = k.prev_key AND p.key_id IS NULL
       WHERE r.run_id = ?`,
    ).get(id, runId) as (Omit<Row, "run_id"> & { head: number | null; k_prev: number | null; k_body: Buffer | null; p_id: number | null; p_prev: number | null; p_body: Buffer | null }) | undefined;
    if (!found) return undefined;
    const row = stored({ ...found, run_id: runId });
    // Keyframes are stored on their own (no dictionary): known from their bodies alone.
    if (found.p_id !== null && found.p_body) this.remember({ id: found.p_id, runId, keyId: null, prevKey: found.p_prev, body: found.p_body });
    if (row.keyId !== null && found.k_body) this.remember({ id: row.keyId, runId, keyId: null, prevKey: found.k_prev, body: found.k_body });
    return { head: found.head, row };
  }

  private remember(keyframe: StoredCheckpoint): void {
    if (this.keyframes.has(keyframe.id)) return;
    if (this.keyframes.size > 256) this.keyframes.clear();
    this.keyframes.set(keyframe.id, { id: keyframe.id, text: this.text(keyframe), prevKey: keyframe.prevKey });
  }

  /** A keyframe with its text (read once per store, then kept: keyframes never change). */
  keyframe = (id: number): KnownKeyframe | undefined => {
    let known = this.keyframes.get(id);
    if (!known) {
      const row = this.get(id);
      if (!row || row.keyId !== null) return undefined;
      this.remember(row);
      known = this.keyframes.get(id);
    }
    return known;
  };

  /** Every checkpoint of the run with its text, oldest first. */
  history(runKey: number): { row: StoredCheckpoint; text: string }[] {
    return (this.sql(`${SELECT} WHERE c.run_key = ? ORDER BY c.id`).all(runKey) as Row[]).map((raw) => {
      const row = stored(raw);
      return { row, text: row.keyId === null ? (this.keyframe(row.id)?.text ?? this.text(row)) : this.text(row) };
    });
  }

  /** The checkpoint's text (its refs and skeleton); a damaged one is a CheckpointError naming it. */
  text(row: StoredCheckpoint): string {
    try {
      return checkpointText(row, dictionaryOf(row, this.keyframe));
    } catch (error) {
      if (error instanceof CheckpointError) throw error;
      throw new CheckpointError(row.runId, `checkpoint ${row.id} of run ${row.runId} in ${this.where} is damaged: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    }
  }

  insert(runKey: number, packed: PackedCheckpoint, latestKeyframe: number | undefined): number {
    const prevKey = packed.keyId === undefined ? (latestKeyframe ?? null) : null;
    return Number(this.sql(`INSERT INTO jianmu_checkpoints (run_key, key_id, prev_key, body) VALUES (?, ?, ?, ?)`).run(runKey, packed.keyId ?? null, prevKey, packed.body).lastInsertRowid);
  }
}
