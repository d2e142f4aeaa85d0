import { deflateRawSync, inflateRawSync } from "node:zlib";
import type { StreamRef } from "./codec.js";
import { refsFromText } from "./streams.js";

/*
 * How SQLite and PostgreSQL keep a checkpoint: its stream refs and skeleton as one text, deflated
 * with the run's two latest *keyframes* (checkpoints stored on their own) as the preset dictionary.
 * A run's skeletons alternate between a few shapes (before a model call, while tools run) and
 * differ from the keyframe of their shape in a few counters and ids, so one costs tens of bytes
 * instead of a kilobyte or two. Reading any checkpoint takes it and two keyframes, whatever the
 * run's length. A run's first two checkpoints are keyframes; so is one that no longer resembles them.
 */

/** A checkpoint compressed against its keyframes to more than this share of its size starts a new keyframe (the run drifted). */
const KEYFRAME_RATIO = 0.15;

/** The run's keyframes as a writer knows them: the latest (its id and text) and the one before it. */
export interface Keyframes {
  id: number;
  text: string;
  previous?: string;
}

export interface PackedCheckpoint {
  body: Buffer;
  /** The latest keyframe it was compressed against; undefined when it is a keyframe itself. */
  keyId: number | undefined;
  /** Its refs and skeleton as one text (a keyframe's text, when it is one). */
  text: string;
}

const dictionaryOf = (texts: readonly string[]) => Buffer.from(texts.join(""), "utf8");

export function packCheckpoint(refs: readonly StreamRef[], skeleton: string, keyframes: Keyframes | undefined): PackedCheckpoint {
  const text = `${JSON.stringify(refs)}\n${skeleton}`;
  const plain = Buffer.from(text, "utf8");
  // Until the run has two keyframes, each checkpoint is one (the second is usually of the other shape).
  if (keyframes?.previous !== undefined) {
    const body = deflateRawSync(plain, { dictionary: dictionaryOf([keyframes.previous, keyframes.text]) });
    if (body.length <= Math.max(64, plain.length * KEYFRAME_RATIO)) return { body, keyId: keyframes.id, text };
  }
  return { body: deflateRawSync(plain), keyId: undefined, text };
}

/** The keyframes after storing `packed` as checkpoint `id`. */
export function keyframesAfter(packed: PackedCheckpoint, id: number, before: Keyframes | undefined): Keyframes | undefined {
  if (packed.keyId !== undefined) return before;
  return { id, text: packed.text, ...(before ? { previous: before.text } : {}) };
}

/** A stored checkpoint's text; `keyframes` are the texts of its keyframe and the one before (oldest first), none for a keyframe. */
export function unpackText(body: Uint8Array, keyframes: readonly string[]): string {
  return inflateRawSync(body, keyframes.length > 0 ? { dictionary: dictionaryOf(keyframes) } : {}).toString("utf8");
}

/** A checkpoint's refs and skeleton from its text. */
export function splitText(text: string): { refs: StreamRef[]; skeleton: string } {
  const at = text.indexOf("\n");
  if (at < 0) throw new Error("its text has no stream list");
  return { refs: refsFromText(text.slice(0, at)), skeleton: text.slice(at + 1) };
}
