import type pg from "pg";
import type { KnownStream, StreamRef } from "../../machines/persistence/log/codec.js";
import { neededCounts, ownElements, streamsFromRows, type StreamRow } from "../../machines/persistence/log/streams.js";
import type { Encoded } from "../../machines/persistence/log/codec.js";
import type { PackedCheckpoint } from "../../machines/persistence/log/packing.js";

/*
 * The run log's rows on PostgreSQL, read and written with any client (the pool, a transaction's
 * client, the migration's): streams with their bases, elements, checkpoints. The store (run-log.ts)
 * decides when; these say how.
 */

export type Query = <R extends pg.QueryResultRow>(text: string, values?: unknown[]) => Promise<pg.QueryResult<R>>;

/**
 * The streams `refs` name, with their bases, and the elements a reader of run `runId` needs (two
 * queries): all of that run's own streams, since its next save may append to them. Without a run
 * (`undefined`: a reader that writes nothing, such as one decoding finished runs' outputs), only
 * what the refs name, so the refs of several runs can be read together.
 */
export async function readStreams(query: Query, schema: string, runId: string | undefined, refs: readonly StreamRef[]): Promise<Map<number, KnownStream>> {
  if (refs.length === 0) return new Map();
  const chain = await query<{ id: string; run_id: string; base_id: string | null; base_count: number | null }>(
    `WITH RECURSIVE chain AS (
       SELECT id, run_key, base_id, base_count FROM ${schema}.streams WHERE id = ANY($1::bigint[])
       UNION SELECT s.id, s.run_key, s.base_id, s.base_count FROM ${schema}.streams s JOIN chain c ON s.id = c.base_id)
     SELECT chain.id, coalesce(r.run_id, '') AS run_id, chain.base_id, chain.base_count FROM chain LEFT JOIN ${schema}.runs r ON r.run_key = chain.run_key`,
    [refs.map(([id]) => id)],
  );
  const rows: StreamRow[] = chain.rows.map((r) => ({ id: Number(r.id), owner: r.run_id, baseId: r.base_id === null ? null : Number(r.base_id), baseCount: r.base_count }));
  const needs = [...neededCounts(rows, refs, runId)];
  const items = await query<{ stream: number; seq: number; text: string }>(
    `SELECT i.stream_id AS stream, i.seq, i.body AS text FROM unnest($1::bigint[], $2::bigint[]) AS n(id, lim) JOIN ${schema}.items i ON i.stream_id = n.id AND i.seq < n.lim ORDER BY i.stream_id, i.seq`,
    [needs.map(([id]) => id), needs.map(([, count]) => count)],
  );
  const byStream = new Map<number, [number, string][]>();
  for (const item of items.rows) {
    let list = byStream.get(Number(item.stream));
    if (!list) byStream.set(Number(item.stream), (list = []));
    list.push([item.seq, item.text]);
  }
  const own = new Map(rows.map((row) => [row.id, ownElements(row.id, row.baseId !== null ? (row.baseCount ?? 0) : 0, byStream.get(row.id) ?? [])]));
  return streamsFromRows(rows, own, (row) => row.owner === runId);
}

/** Take `n` stream ids from the table's sequence (a store keeps a few in hand, so most saves need none). */
export async function nextStreamIds(query: Query, schema: string, n: number): Promise<number[]> {
  const { rows } = await query<{ id: string }>(`SELECT nextval('${schema}.streams_id_seq') AS id FROM generate_series(1, $1)`, [n]);
  return rows.map((r) => Number(r.id));
}

/** Parameters of the streams and elements an encoded save writes (arrays for `unnest`). */
export function streamParams(stored: Encoded): unknown[] {
  return [
    stored.streams.map((s) => s.id),
    stored.streams.map((s) => s.base?.[0] ?? null),
    stored.streams.map((s) => s.base?.[1] ?? null),
    stored.items.map((i) => i.stream),
    stored.items.map((i) => i.seq),
    stored.items.map((i) => i.text),
  ];
}

/** The streams and elements of `stored` ($2..$7 as streamParams gives them) of the run whose key `runKey` yields, written when `condition` holds. */
export function insertStreamsSql(schema: string, runKey: string, condition: string): string {
  return `s AS (INSERT INTO ${schema}.streams (id, run_key, base_id, base_count)
       SELECT u.id, ${runKey}, u.base_id, u.base_count FROM unnest($2::bigint[], $3::bigint[], $4::int[]) AS u(id, base_id, base_count) WHERE ${condition} RETURNING 1),
     i AS (INSERT INTO ${schema}.items (stream_id, seq, body)
       SELECT u.stream_id, u.seq, u.body FROM unnest($5::bigint[], $6::int[], $7::text[]) AS u(stream_id, seq, body) WHERE ${condition} RETURNING 1)`;
}

/** One checkpoint written with a client inside a transaction (forks and the migration; saves use one statement). */
export async function insertCheckpoint(query: Query, schema: string, runId: string, stored: Encoded, packed: PackedCheckpoint, prevKey: number | null): Promise<number> {
  const { rows } = await query<{ id: string }>(
    `WITH run AS (SELECT run_key FROM ${schema}.runs WHERE run_id = $1::text), ${insertStreamsSql(schema, "(SELECT run_key FROM run)", "true")}
     INSERT INTO ${schema}.checkpoints (run_key, key_id, prev_key, body) SELECT run_key, $8::bigint, $10::bigint, $9::bytea FROM run RETURNING id`,
    [runId, ...streamParams(stored), packed.keyId ?? null, packed.body, prevKey],
  );
  return Number(rows[0]!.id);
}
