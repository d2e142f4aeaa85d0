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

const stored = (row: Row): StoredCheckpoint => ({ id: row.id, runId: row.run_id, keyId: row.key_id, prevKey: row.prev_key, body: row.body });

/** The checkpoint rows of a SQLite store: read, decompressed (keyframes' texts kept at hand), written. */
export class SqliteCheckpointRows {
  private readonly keyframes = new Map<number, KnownKeyframe>();

  constructor(
    private readonly sql: (text: string) => Database.Statement,
    private readonly where: string,
  ) {}

  get(id: number, runId?: string): StoredCheckpoint | undefined {
    const row = (runId === undefined ? this.sql(`SELECT * FROM jianmu_checkpoints WHERE id = ?`).get(id) : this.sql(`SELECT * FROM jianmu_checkpoints WHERE id = ? AND run_id = ?`).get(id, runId)) as Row | undefined;
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
  history(runId: string): { row: StoredCheckpoint; text: string }[] {
    return (this.sql(`SELECT * FROM jianmu_checkpoints WHERE run_id = ? ORDER BY id`).all(runId) as Row[]).map((raw) => {
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

  insert(runId: string, packed: PackedCheckpoint, latestKeyframe: number | undefined): number {
    const prevKey = packed.keyId === undefined ? (latestKeyframe ?? null) : null;
    return Number(this.sql(`INSERT INTO jianmu_checkpoints (run_id, key_id, prev_key, body) VALUES (?, ?, ?, ?)`).run(runId, packed.keyId ?? null, prevKey, packed.body).lastInsertRowid);
  }
}
