import type { CheckpointEntry } from "./log-store.js";
import { type Keyframes, splitText, unpackText } from "./packing.js";
import { entryOf } from "./records.js";
import { decodeValue } from "./codec.js";

/*
 * A checkpoint row of the SQL stores (SQLite, PostgreSQL): its id, its run and its body (packing.ts). A checkpoint compressed against keyframes names the latest (`keyId`); a
 * keyframe has none and names the keyframe before it (`prevKey`), which the next checkpoints use
 * too. Everything else a checkpoint says (state, status, iteration, when) is in its skeleton.
 */
export interface StoredCheckpoint {
  id: number;
  runId: string;
  keyId: number | null;
  prevKey: number | null;
  body: Uint8Array;
}

/** A keyframe as readers keep it at hand: its id, text and the keyframe before it. */
export interface KnownKeyframe {
  id: number;
  text: string;
  prevKey: number | null;
}

/** The keyframes whose texts a row needs, oldest first: none for a keyframe, else its keyframe's predecessor (if any) and its keyframe. */
export function dictionaryOf(row: StoredCheckpoint, keyframe: (id: number) => KnownKeyframe | undefined): string[] {
  if (row.keyId === null) return [];
  const key = keyframe(row.keyId);
  if (!key) throw new Error(`its keyframe ${row.keyId} is missing`);
  const previous = key.prevKey === null ? undefined : keyframe(key.prevKey);
  if (key.prevKey !== null && !previous) throw new Error(`keyframe ${key.prevKey} is missing`);
  return previous ? [previous.text, key.text] : [key.text];
}

/** The row's text, given its dictionary (dictionaryOf). */
export function checkpointText(row: StoredCheckpoint, dictionary: readonly string[]): string {
  return unpackText(row.body, dictionary);
}

/** What `history()` says of a checkpoint, read from its skeleton. */
export function entryFromText(row: StoredCheckpoint, text: string): CheckpointEntry {
  const { refs, skeleton } = splitText(text);
  const envelope = decodeValue(JSON.parse(skeleton), refs, () => []).value as { state: string; status: CheckpointEntry["status"]; iteration: number; savedAt: number };
  return entryOf({ id: row.id, runId: row.runId, state: envelope.state, status: envelope.status, iteration: envelope.iteration, savedAt: envelope.savedAt });
}

/** The keyframes a writer continues with when this row (with text `text`) is the run's latest. */
export function keyframesAt(row: StoredCheckpoint, text: string, keyframe: (id: number) => KnownKeyframe | undefined): Keyframes {
  const latest = row.keyId === null ? { id: row.id, text, prevKey: row.prevKey } : keyframe(row.keyId);
  if (!latest) throw new Error(`its keyframe ${row.keyId} is missing`);
  const previous = latest.prevKey === null ? undefined : keyframe(latest.prevKey);
  return { id: latest.id, text: latest.text, ...(previous ? { previous: previous.text } : {}) };
}
