import { deflateRawSync, inflateRawSync } from "node:zlib";

/*
 * How SQLite and PostgreSQL keep a checkpoint's skeleton: deflated, with the run's current
 * *keyframe* (an earlier checkpoint's skeleton) as the preset dictionary. Consecutive checkpoints
 * differ in a few counters and ids, so one costs tens of bytes instead of a kilobyte or two. A
 * keyframe is stored deflated on its own; a checkpoint names its keyframe, so reading any one takes
 * two rows whatever the run's length.
 */

/** A skeleton compressed against its keyframe to more than this share of its size starts a new keyframe (the run drifted). */
const KEYFRAME_RATIO = 0.2;

export interface PackedSkeleton {
  body: Buffer;
  /** The keyframe it was compressed against; undefined when it is a keyframe itself. */
  keyId: number | undefined;
}

export function packSkeleton(text: string, keyframe: { id: number; text: string } | undefined): PackedSkeleton {
  const plain = Buffer.from(text, "utf8");
  if (keyframe) {
    const body = deflateRawSync(plain, { dictionary: Buffer.from(keyframe.text, "utf8") });
    if (body.length <= Math.max(64, plain.length * KEYFRAME_RATIO)) return { body, keyId: keyframe.id };
  }
  return { body: deflateRawSync(plain), keyId: undefined };
}

export function unpackSkeleton(body: Uint8Array, keyframeText: string | undefined): string {
  return inflateRawSync(body, keyframeText !== undefined ? { dictionary: Buffer.from(keyframeText, "utf8") } : {}).toString("utf8");
}
