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

  /** A keyframe with its text (read once per store, then kept: keyframes never change). */
  keyframe = (id: number): KnownKeyframe | undefined => {
    let known = this.keyframes.get(id);
    if (!known) {
      const row = this.get(id);
      if (!row || row.keyId !== null) return undefined;
      if (this.keyframes.size > 256) this.keyframes.clear();
      known = { id, text: this.text(row), prevKey: row.prevKey };
      this.keyframes.set(id, known);
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
