import type Database from "better-sqlite3";
import type { KnownStream, StreamRef } from "../codec.js";
import { ALL_ELEMENTS, neededCounts, ownElements, streamsFromRows, type StreamRow } from "../streams.js";

/**
 * Reads the streams a checkpoint refers to: their rows with every base they build on (one
 * recursive query), then the elements each one needs (a range of the elements' primary key each).
 * A writer (`forWriting`) gets all of the run's own streams, which its next save may append to; a
 * reader only the elements the refs name, as bare texts (no row objects: a long conversation is
 * thousands of them), their count checked against the range asked for.
 */
export class SqliteStreamReader {
  constructor(private readonly sql: (text: string) => Database.Statement) {}

  read(runId: string, refs: readonly StreamRef[], forWriting: boolean): Map<number, KnownStream> {
    if (refs.length === 0) return new Map();
    const rows = this.sql(
      `WITH RECURSIVE chain(id) AS (SELECT value FROM json_each(?) UNION SELECT s.base_id FROM jianmu_streams s JOIN chain c ON s.id = c.id WHERE s.base_id IS NOT NULL)
       SELECT s.id, coalesce(r.run_id, '') AS owner, s.base_id AS baseId, s.base_count AS baseCount
       FROM jianmu_streams s JOIN chain c ON s.id = c.id LEFT JOIN jianmu_runs r ON r.run_key = s.run_key`,
    ).all(JSON.stringify(refs.map(([id]) => id))) as StreamRow[];
    const byId = new Map(rows.map((row) => [row.id, row]));
    const own = new Map<number, string[]>();
    for (const [stream, count] of neededCounts(rows, refs, forWriting ? runId : undefined)) {
      const start = byId.get(stream)?.baseId != null ? (byId.get(stream)!.baseCount ?? 0) : 0;
      if (count > start) own.set(stream, this.elements(stream, start, count));
    }
    return streamsFromRows(rows, own, (row) => forWriting && row.owner === runId);
  }

  /** Elements `start` up to `count` (or all) of a stream: a missing one is a lost row (ownElements names it). */
  private elements(stream: number, start: number, count: number): string[] {
    if (count !== ALL_ELEMENTS) {
      // Unique seqs in [start, count), as many as the range holds: none is missing.
      const texts = this.sql(`SELECT body FROM jianmu_items WHERE stream_id = ? AND seq >= ? AND seq < ? ORDER BY seq`).pluck(true).all(stream, start, count) as string[];
      if (texts.length === count - start) return texts;
    }
    const rows = this.sql(`SELECT seq, body FROM jianmu_items WHERE stream_id = ? AND seq >= ? AND seq < ? ORDER BY seq`).raw(true).all(stream, start, count) as [number, string][];
    return ownElements(stream, start, rows);
  }
}
