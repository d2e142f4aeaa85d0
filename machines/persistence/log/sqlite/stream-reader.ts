import type Database from "better-sqlite3";
import type { KnownStream, StreamRef } from "../codec.js";
import { neededCounts, ownElements, streamsFromRows, type StreamRow } from "../streams.js";

/**
 * Reads the streams a checkpoint refers to: their rows with every base they build on (one
 * recursive query), then the elements each one needs (a range of the elements' primary key each).
 */
export class SqliteStreamReader {
  constructor(private readonly sql: (text: string) => Database.Statement) {}

  read(runId: string, refs: readonly StreamRef[]): Map<number, KnownStream> {
    if (refs.length === 0) return new Map();
    const rows = this.sql(
      `WITH RECURSIVE chain(id) AS (SELECT value FROM json_each(?) UNION SELECT s.base_id FROM jianmu_streams s JOIN chain c ON s.id = c.id WHERE s.base_id IS NOT NULL)
       SELECT s.id, coalesce(r.run_id, '') AS owner, s.base_id AS baseId, s.base_count AS baseCount
       FROM jianmu_streams s JOIN chain c ON s.id = c.id LEFT JOIN jianmu_runs r ON r.run_key = s.run_key`,
    ).all(JSON.stringify(refs.map(([id]) => id))) as StreamRow[];
    // One range of the primary key per stream, rows as arrays: a long conversation is thousands of them.
    const range = this.sql(`SELECT seq, body FROM jianmu_items WHERE stream_id = ? AND seq < ? ORDER BY seq`).raw(true);
    const byId = new Map(rows.map((row) => [row.id, row]));
    const own = new Map<number, string[]>();
    for (const [stream, count] of neededCounts(rows, refs, runId)) {
      const start = byId.get(stream)?.baseId != null ? (byId.get(stream)!.baseCount ?? 0) : 0;
      if (count > start) own.set(stream, ownElements(stream, start, range.all(stream, count) as [number, string][]));
    }
    return streamsFromRows(rows, own, (row) => row.owner === runId);
  }
}
