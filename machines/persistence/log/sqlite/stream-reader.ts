import type Database from "better-sqlite3";
import type { KnownStream, StreamRef } from "../codec.js";
import { neededCounts, streamsFromRows, type ItemRow, type StreamRow } from "../streams.js";

/**
 * Reads the streams a checkpoint refers to: their rows with every base they build on (one
 * recursive query), then the elements each one needs (one query on the elements' primary key).
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
    const needs = neededCounts(rows, refs, runId);
    const items = this.sql(
      `SELECT i.stream_id AS stream, i.seq AS seq, i.body AS text FROM json_each(?) j
       JOIN jianmu_items i ON i.stream_id = json_extract(j.value, '$[0]') AND i.seq < json_extract(j.value, '$[1]')`,
    ).all(JSON.stringify([...needs])) as ItemRow[];
    return streamsFromRows(rows, items, (row) => row.owner === runId);
  }
}
