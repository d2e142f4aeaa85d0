import { CheckpointError } from "../../machines/persistence/checkpoints/store.js";
import type { PackedCheckpoint } from "../../machines/persistence/log/packing.js";
import { checkpointText, dictionaryOf, type KnownKeyframe, type StoredCheckpoint } from "../../machines/persistence/log/stored-checkpoint.js";
import type { Query } from "./log-rows.js";

interface Row {
  id: string;
  run_id: string;
  key_id: string | null;
  prev_key: string | null;
  body: Buffer;
}

/** A checkpoint with the keyframes it needs (its keyframe and the one before, or a keyframe's predecessor). */
export interface ReadCheckpoint {
  row: StoredCheckpoint;
  keyframe: (id: number) => KnownKeyframe | undefined;
  /** The run's head when it was read. */
  head: number;
}

const num = (value: string | null) => (value === null ? null : Number(value));
const stored = (row: Row): StoredCheckpoint => ({ id: Number(row.id), runId: row.run_id, keyId: num(row.key_id), prevKey: num(row.prev_key), body: row.body });

/** The checkpoint rows of a PostgreSQL store: read with their keyframes in one query, decompressed, written. */
export class PgCheckpointRows {
  constructor(
    private readonly schema: string,
    private readonly where: string,
  ) {}

  /** Checkpoint `id` of the run, or its head when `id` is null; undefined when there is none. */
  async read(query: Query, runId: string, id: number | null): Promise<ReadCheckpoint | undefined> {
    const c = `${this.schema}.checkpoints`;
    const { rows } = await query<Row & { head: string | null; k_id: string | null; k_prev: string | null; k_body: Buffer | null; p_id: string | null; p_body: Buffer | null }>(
      `SELECT c.id, c.key_id, c.prev_key, c.body, r.run_id, r.head, k.id AS k_id, k.prev_key AS k_prev, k.body AS k_body, p.id AS p_id, p.body AS p_body
       FROM ${this.schema}.runs r JOIN ${c} c ON c.run_key = r.run_key AND c.id = coalesce($2::bigint, r.head)
       LEFT JOIN ${c} k ON k.run_key = c.run_key AND k.id = c.key_id
       LEFT JOIN ${c} p ON p.run_key = c.run_key AND p.id = coalesce(k.prev_key, c.prev_key)
       WHERE r.run_id = $1`,
      [runId, id],
    );
    const found = rows[0];
    if (!found) return undefined;
    const keyframes = new Map<number, KnownKeyframe>();
    if (found.p_id !== null) keyframes.set(Number(found.p_id), { id: Number(found.p_id), text: this.standalone(runId, Number(found.p_id), found.p_body!), prevKey: null });
    if (found.k_id !== null) keyframes.set(Number(found.k_id), { id: Number(found.k_id), text: this.standalone(runId, Number(found.k_id), found.k_body!), prevKey: num(found.k_prev) });
    return { row: stored(found), keyframe: (key) => keyframes.get(key), head: Number(found.head) };
  }

  /** Every checkpoint of the run with its text, oldest first. */
  async history(query: Query, runId: string): Promise<{ row: StoredCheckpoint; text: string }[]> {
    const { rows } = await query<Row>(`SELECT c.*, r.run_id FROM ${this.schema}.checkpoints c JOIN ${this.schema}.runs r ON r.run_key = c.run_key WHERE r.run_id = $1 ORDER BY c.id`, [runId]);
    const keyframes = new Map<number, KnownKeyframe>();
    return rows.map((raw) => {
      const row = stored(raw);
      const text = this.text(row, (key) => keyframes.get(key));
      if (row.keyId === null) keyframes.set(row.id, { id: row.id, text, prevKey: row.prevKey });
      return { row, text };
    });
  }

  /** The checkpoint's text (its refs and skeleton); a damaged one is a CheckpointError naming it. */
  text(row: StoredCheckpoint, keyframe: (id: number) => KnownKeyframe | undefined): string {
    try {
      return checkpointText(row, dictionaryOf(row, keyframe));
    } catch (error) {
      throw new CheckpointError(row.runId, `checkpoint ${row.id} of run ${row.runId} in ${this.where} is damaged: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    }
  }

  /** The keyframe a new checkpoint names as the one before it (a keyframe itself), or null. */
  static prevKeyOf(packed: PackedCheckpoint, latestKeyframe: number | undefined): number | null {
    return packed.keyId === undefined ? (latestKeyframe ?? null) : null;
  }

  private standalone(runId: string, id: number, body: Buffer): string {
    return this.text({ id, runId, keyId: null, prevKey: null, body }, () => undefined);
  }
}
