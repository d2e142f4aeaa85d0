import { DEFAULT_SNAPSHOT_LIMITS, snapshotLimitProblem, type SnapshotLimits } from "../snapshot-limits.js";
import type { Keyframes } from "./packing.js";
import { decodeValue, DamagedSkeleton, type Encoded, type KnownStream, type StreamContext, type StreamRef } from "./codec.js";

/*
 * Streams as the stores keep them (one row per stream, one row per element) and the steps every
 * backend shares around the codec: giving planned streams their stored ids, reading streams back
 * from rows, and rebuilding a value from a skeleton.
 */

/** A stream's row: whose it is and the prefix of another stream it starts with. */
export interface StreamRow {
  id: number;
  owner: string;
  baseId: number | null;
  baseCount: number | null;
}

/** The run's latest checkpoint as the writer knows it, and the streams it refers to. */
export interface RunContext extends StreamContext {
  /** The run's latest checkpoint id (undefined before its first save). */
  readonly head: number | undefined;
  /** The checkpoints the next ones are compressed against (SQLite, PostgreSQL: packing.ts). */
  readonly keyframe?: Keyframes;
}

export function emptyContext(runId: string): RunContext {
  return { runId, head: undefined, known: new Map(), paths: new Map() };
}

/** The encoded writes with the stored ids of the streams it planned (temporary ids are negative). */
export function withStoredIds(encoded: Encoded, ids: ReadonlyMap<number, number>): Encoded {
  const id = (temp: number) => (temp < 0 ? ids.get(temp)! : temp);
  const ref = ([stream, count]: StreamRef): StreamRef => [id(stream), count];
  return {
    skeleton: encoded.skeleton,
    refs: encoded.refs.map(ref),
    streams: encoded.streams.map((s) => ({ id: id(s.id), ...(s.base ? { base: ref(s.base) } : {}) })),
    items: encoded.items.map((item) => ({ ...item, stream: id(item.stream) })),
    known: new Map([...encoded.known.values()].map((s) => [id(s.id), { ...s, id: id(s.id) }])),
    paths: new Map([...encoded.paths].map(([path, stream]) => [path, id(stream)])),
  };
}

/** What the next save of the run starts from, once `stored` (with stored ids) is written as checkpoint `head`. */
export function contextAfter(previous: RunContext, stored: Encoded, head: number, keyframe: RunContext["keyframe"]): RunContext {
  return { runId: previous.runId, head, known: stored.known, paths: stored.paths, ...(keyframe ? { keyframe } : {}) };
}

/** A stream's own elements as read in order from index `start` (its base's count): a missing one is a lost row. */
export function ownElements(stream: number, start: number, rows: Iterable<readonly [number, string]>): string[] {
  const texts: string[] = [];
  for (const [seq, text] of rows) {
    if (seq !== start + texts.length) throw new DamagedSkeleton(`stream ${stream} has a gap before element ${seq}`);
    texts.push(text);
  }
  return texts;
}

/**
 * Streams from their rows: each one's texts, its base's prefix included. `rows` must hold every
 * stream the wanted ones build on; `own` each stream's own elements (ownElements). Throws (naming the
 * stream) when a row is missing.
 */
export function streamsFromRows(rows: readonly StreamRow[], own: ReadonlyMap<number, readonly string[]>, complete: (row: StreamRow) => boolean = () => true): Map<number, KnownStream> {
  const byId = new Map(rows.map((row) => [row.id, row]));
  const resolved = new Map<number, KnownStream>();
  const resolve = (id: number, depth: number): KnownStream => {
    const done = resolved.get(id);
    if (done) return done;
    const row = byId.get(id);
    if (!row) throw new DamagedSkeleton(`stream ${id} is missing`);
    if (depth > 10_000) throw new DamagedSkeleton(`stream ${id} builds on itself`);
    const start = row.baseId !== null ? (row.baseCount ?? 0) : 0;
    const base = row.baseId !== null ? resolve(row.baseId, depth + 1).texts : [];
    const mine = own.get(id) ?? [];
    // A reader that needs fewer elements than the base prefix reads only those (and none of the stream's own).
    if (base.length < start && mine.length > 0) throw new DamagedSkeleton(`stream ${id} starts with ${start} elements of stream ${row.baseId}, which holds ${base.length}`);
    const texts = base.length < start ? base.slice() : start === 0 ? mine.slice() : [...base.slice(0, start), ...mine];
    const stream = { id, owner: row.owner, texts, complete: complete(row) && base.length >= start };
    resolved.set(id, stream);
    return stream;
  };
  for (const row of rows) resolve(row.id, 0);
  return resolved;
}

/** Read everything (a run's own streams: the next save may append to them). */
export const ALL_ELEMENTS = Number.MAX_SAFE_INTEGER;

/**
 * How many elements of each stream a reader needs: the counts the refs name, everything of the
 * streams of run `writer` (whose next save may append to them), and of each base the prefix the
 * streams built on it take.
 */
export function neededCounts(rows: readonly StreamRow[], refs: readonly StreamRef[], writer: string | undefined): Map<number, number> {
  const need = new Map<number, number>();
  const raise = (id: number, count: number) => {
    if (count > (need.get(id) ?? 0)) {
      need.set(id, count);
      return true;
    }
    return false;
  };
  for (const [id, count] of refs) raise(id, count);
  if (writer !== undefined) for (const row of rows) if (row.owner === writer) raise(row.id, ALL_ELEMENTS);
  for (let changed = true; changed; ) {
    changed = false;
    for (const row of rows) if (row.baseId !== null && raise(row.baseId, Math.min(row.baseCount ?? 0, need.get(row.id) ?? 0))) changed = true;
  }
  return need;
}

/** How deep a parsed JSON value nests (objects and arrays), without recursing. */
function depthOf(value: unknown): number {
  let deepest = 0;
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (node === null || typeof node !== "object") continue;
    deepest = Math.max(deepest, depth + 1);
    for (const child of Object.values(node)) stack.push([child, depth + 1]);
  }
  return deepest;
}

/** How deep a JSON text nests, by scanning it (strings skipped). */
function textDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92) i++;
      else if (c === 34) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 91 || c === 123) deepest = Math.max(deepest, ++depth);
    else if (c === 93 || c === 125) depth--;
  }
  return deepest;
}

/**
 * The limits `restoreAgent` puts on a saved record (snapshot-limits.ts), checked on the parts before
 * they are put together: characters counted from the texts, depth as the skeleton's plus the deepest
 * element's (an element too short to nest that deep is not scanned).
 */
function partsLimitProblem(skeleton: string, value: unknown, refs: readonly StreamRef[], streams: ReadonlyMap<number, KnownStream>, limits: SnapshotLimits): string | undefined {
  const outer = depthOf(value);
  let chars = skeleton.length;
  let deepest = 0;
  for (const [id, count] of refs) {
    const texts = streams.get(id)?.texts ?? [];
    for (let i = 0; i < Math.min(count, texts.length); i++) {
      const text = texts[i]!;
      chars += text.length;
      if (outer + Math.ceil(text.length / 2) > limits.maxDepth) deepest = Math.max(deepest, textDepth(text));
    }
  }
  if (chars > limits.maxChars) return `it holds more than ${limits.maxChars} characters of JSON`;
  if (outer + deepest > limits.maxDepth) return `it is nested more than ${limits.maxDepth} levels deep`;
  return undefined;
}

/**
 * Rebuild a value from its skeleton text and the streams it refers to (each stream parsed once),
 * refusing it as `restoreAgent` would when it breaks the snapshot limits.
 */
export function decodeSkeleton(
  skeleton: string,
  refs: readonly StreamRef[],
  streams: ReadonlyMap<number, KnownStream>,
  limits: SnapshotLimits = DEFAULT_SNAPSHOT_LIMITS,
): { value: unknown; paths: Map<string, number> } {
  const parsed = new Map<number, unknown[]>();
  const elements = ([id, count]: StreamRef): unknown[] => {
    const stream = streams.get(id);
    if (!stream) throw new DamagedSkeleton(`stream ${id} is missing`);
    if (stream.texts.length < count) throw new DamagedSkeleton(`stream ${id} holds ${stream.texts.length} elements, the checkpoint needs ${count}`);
    let list = parsed.get(id);
    if (!list) parsed.set(id, (list = []));
    // Element by element (measured faster than one parse of the joined texts), each once per load.
    for (let i = list.length; i < count; i++) {
      try {
        list.push(JSON.parse(stream.texts[i]!));
      } catch {
        throw new DamagedSkeleton(`element ${i} of stream ${id} is not JSON`);
      }
    }
    return list.slice(0, count);
  };
  let value: unknown;
  try {
    value = JSON.parse(skeleton);
  } catch (error) {
    throw new DamagedSkeleton(`its skeleton is not JSON (${error instanceof Error ? error.message : String(error)})`);
  }
  // Before anything recursive walks it.
  const problem = snapshotLimitProblem(value, limits) ?? partsLimitProblem(skeleton, value, refs, streams, limits);
  if (problem !== undefined) throw new DamagedSkeleton(`it is refused: ${problem}`);
  return decodeValue(value, refs, elements);
}

/** The refs as a store keeps them: `[[id, count], ...]` as JSON text, checked when read back. */
export function refsFromText(text: string): StreamRef[] {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new DamagedSkeleton("its stream list is not JSON");
  }
  if (!Array.isArray(value) || !value.every((r) => Array.isArray(r) && r.length === 2 && r.every((n) => Number.isInteger(n) && n >= 0))) {
    throw new DamagedSkeleton("its stream list is not a list of [stream, count] pairs");
  }
  return value as StreamRef[];
}

/** The stream each array path of a stored skeleton used (what the next save compares against), without rebuilding it. */
export function pathsOf(skeleton: string, refs: readonly StreamRef[]): Map<string, number> {
  return decodeValue(JSON.parse(skeleton), refs, () => []).paths;
}
