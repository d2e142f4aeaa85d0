import { JianmuError } from "../../../tools/jianmu-error.js";

/*
 * How a run's log stores a snapshot without writing its conversation again at every save.
 *
 * A saved record is JSON. Every array in it that is big enough (the conversation, the call log, the
 * LLM step's copy of the conversation, the tool list, a nested agent's conversation...) is stored as
 * a *stream*: an append-only list of element texts, one row per element, kept by the run. What is
 * left of the record (the *skeleton*) refers to a stream and how many of its elements the array
 * holds: `{"$stream": k}`, k indexing the checkpoint's list of `[streamId, count]` refs.
 *
 * Saving the next checkpoint compares each array with the streams the previous checkpoint used:
 * an array that extends its stream appends the new elements only; one that is a prefix of a stream
 * (the LLM input's copy of the conversation) appends nothing; one that diverges (compaction, a fork
 * with a replaced message, the next run of a thread) starts a new stream whose first elements are a
 * prefix of the old one (its `base`), so nothing already stored is stored twice. The elements are
 * whatever the record holds, compared and stored as JSON text: nothing here knows what a message is.
 *
 * Decoding puts the arrays back from the streams; `JSON.stringify` of the result is, byte for byte,
 * `JSON.stringify` of the record that was saved.
 */

/** `[streamId, count]`: the first `count` elements of a stream. */
export type StreamRef = readonly [streamId: number, count: number];

/** A stream as a writer knows it: every element's JSON text, its base's included. */
export interface KnownStream {
  /** Negative while it is being planned and has no id in the store yet. */
  readonly id: number;
  /** The run whose saves append to it (others only take a prefix of it as a base). */
  readonly owner: string;
  /** Its elements from the first on; a reader may know fewer than the stream holds (then `complete` is false). */
  readonly texts: readonly string[];
  /** False when `texts` is only a prefix of what is stored: such a stream is never appended to, only built on. */
  readonly complete?: boolean;
}

/** What the previous checkpoint of the run (or the one a fork or thread starts from) holds. */
export interface StreamContext {
  readonly runId: string;
  readonly known: ReadonlyMap<number, KnownStream>;
  /** Which stream each array path used. */
  readonly paths: ReadonlyMap<string, number>;
}

/** The writes that store one encoded value, and what the next save starts from. */
export interface Encoded {
  /** The value as JSON text, its big arrays replaced by `{"$stream": k}`. */
  skeleton: string;
  refs: StreamRef[];
  /** Streams to create, with temporary (negative) ids that refs and items use until they are stored. */
  streams: { id: number; base?: StreamRef }[];
  /** Elements to append: `seq` is the element's index in its stream. */
  items: { stream: number; seq: number; text: string }[];
  /** The streams this value refers to, for the next save's context. */
  known: Map<number, KnownStream>;
  paths: Map<string, number>;
}

/** Arrays smaller than this (in characters of JSON) stay inline in the skeleton. */
export const MIN_STREAM_CHARS = 256;

const MARK = "$stream";
const ESCAPED = "escaped";

/** Sets a key the way JSON.parse does, `__proto__` included (an own property, never the prototype). */
function put(target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === "__proto__") Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  else target[key] = value;
}

/** JSON.stringify's view of a value: what it writes for it, or undefined when it leaves the key out. */
function jsonValue(value: unknown): unknown {
  if (value !== null && typeof value === "object" && typeof (value as { toJSON?: unknown }).toJSON === "function") value = (value as { toJSON: () => unknown }).toJSON();
  if (typeof value === "number") return Number.isFinite(value) ? value : null;
  if (value === undefined || typeof value === "function" || typeof value === "symbol") return undefined;
  return value;
}

function commonPrefix(a: readonly string[], b: readonly string[]): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

/** Encode one value (a whole saved record) against what the run's previous save stored. */
export function encodeValue(value: unknown, context: StreamContext): Encoded {
  const out: Encoded = { skeleton: "", refs: [], streams: [], items: [], known: new Map(), paths: new Map() };
  const refIndex = new Map<string, number>();
  let nextTemp = -1;

  const streamOf = (id: number): KnownStream | undefined => out.known.get(id) ?? context.known.get(id);

  const refTo = (stream: KnownStream, count: number, path: string) => {
    out.known.set(stream.id, stream);
    out.paths.set(path, stream.id);
    const key = `${stream.id}:${count}`;
    let index = refIndex.get(key);
    if (index === undefined) {
      index = out.refs.length;
      out.refs.push([stream.id, count]);
      refIndex.set(key, index);
    }
    return { [MARK]: index };
  };

  const append = (stream: number, from: number, texts: readonly string[]) => {
    for (let i = 0; i < texts.length; i++) out.items.push({ stream, seq: from + i, text: texts[i]! });
  };

  const storeArray = (texts: string[], path: string) => {
    const candidates = new Set<number>();
    const same = context.paths.get(path);
    if (same !== undefined) candidates.add(same);
    for (const id of out.known.keys()) candidates.add(id);
    for (const id of context.known.keys()) candidates.add(id);
    let best: KnownStream | undefined;
    let shared = 0;
    for (const id of candidates) {
      const stream = streamOf(id);
      if (!stream) continue;
      const prefix = commonPrefix(stream.texts, texts);
      if (prefix > shared || best === undefined) [best, shared] = [stream, prefix];
      if (prefix === texts.length) break;
    }
    const rest = texts.slice(shared);
    // A run refers only to its own streams (another run's are built on), so deleting a run knows what it may drop.
    if (best && best.owner === context.runId) {
      if (shared === texts.length) return refTo(best, texts.length, path);
      if (shared === best.texts.length && best.complete !== false) {
        append(best.id, shared, rest);
        return refTo({ ...best, texts: [...best.texts, ...rest] }, texts.length, path);
      }
    }
    const id = nextTemp--;
    const base: StreamRef | undefined = best && shared > 0 ? [best.id, shared] : undefined;
    out.streams.push(base ? { id, base } : { id });
    append(id, base ? shared : 0, base ? rest : texts);
    return refTo({ id, owner: context.runId, texts }, texts.length, path);
  };

  const walk = (raw: unknown, path: string): unknown => {
    const value = jsonValue(raw);
    if (Array.isArray(value)) {
      const texts = new Array<string>(value.length);
      let chars = 2;
      for (let i = 0; i < value.length; i++) {
        texts[i] = JSON.stringify(value[i]) ?? "null";
        chars += texts[i]!.length + 1;
      }
      if (chars >= MIN_STREAM_CHARS) return storeArray(texts, path);
      return Array.from({ length: value.length }, (_, i) => walk(value[i], `${path}/*`) ?? null);
    }
    if (value === null || typeof value !== "object") return value;
    const object: Record<string, unknown> = {};
    for (const key of Object.keys(value)) {
      const encoded = walk((value as Record<string, unknown>)[key], `${path}/${key.replaceAll("~", "~0").replaceAll("/", "~1")}`);
      if (encoded !== undefined) put(object, key, encoded);
    }
    // A record's own "$stream" key must not pass for a reference.
    return Object.hasOwn(object, MARK) ? { [MARK]: ESCAPED, object } : object;
  };

  out.skeleton = JSON.stringify(walk(value, "")) ?? "null";
  return out;
}

/** A stored checkpoint that does not decode: says what is wrong (the store adds which checkpoint, and where). */
export class DamagedSkeleton extends JianmuError {
  static override readonly errorCode = "DAMAGED_CHECKPOINT";
  override name = "DamagedSkeleton";
}

/**
 * Put the arrays back: `elements(ref)` hands each referenced stream's first `count` elements (parsed).
 * Also reports which stream each array path used, for the next save.
 */
export function decodeValue(skeleton: unknown, refs: readonly StreamRef[], elements: (ref: StreamRef) => unknown[]): { value: unknown; paths: Map<string, number> } {
  const paths = new Map<string, number>();
  const walk = (value: unknown, path: string): unknown => {
    if (Array.isArray(value)) return value.map((item) => walk(item, `${path}/*`));
    if (value === null || typeof value !== "object") return value;
    let source = value as Record<string, unknown>;
    if (Object.hasOwn(source, MARK)) {
      const mark = source[MARK];
      if (typeof mark === "number") {
        const ref = refs[mark];
        if (!ref) throw new DamagedSkeleton(`it refers to stream #${mark}, but the checkpoint lists ${refs.length}`);
        paths.set(path, ref[0]);
        return elements(ref);
      }
      if (mark !== ESCAPED || source.object === null || typeof source.object !== "object") throw new DamagedSkeleton(`a "${MARK}" marker at ${path || "/"} is neither a reference nor an escaped object`);
      source = source.object as Record<string, unknown>;
    }
    const object: Record<string, unknown> = {};
    for (const key of Object.keys(source)) put(object, key, walk(source[key], `${path}/${key.replaceAll("~", "~0").replaceAll("/", "~1")}`));
    return object;
  };
  return { value: walk(skeleton, ""), paths };
}
