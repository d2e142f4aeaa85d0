import { createRequire } from "node:module";
import { BLOB_REF_PATTERN } from "../../actors/messages.js";
import { inlineData, type MediaSource } from "../../actors/content-parts.js";
import { CheckpointError } from "./checkpoints/store.js";

/*
 * Large images and files are kept once per run, not in every checkpoint. A run's conversation
 * holds a screenshot from the round it arrived until the run ends, and a checkpoint is written
 * several times a round: inline, its bytes would be written again with each one. So when a
 * checkpoint is taken, every image or file part whose inline bytes are large is replaced in the
 * saved snapshot by a reference (`blob: "sha256:<hex>"`), and the bytes go to the store's blob
 * table, once per run and content. Loading the checkpoint (`loadCheckpoint`, `resolveBlobs`) puts
 * the bytes back, so a restored run, the viewer and the web page see the parts as they were.
 * The live actor's context is never changed: only what is written is.
 */

type MaybePromise<T> = T | Promise<T>;

/** node:crypto, loaded when the first large part is hashed: `import "jianmu"` does not load it (test/package/lean.test.ts). */
let crypto: typeof import("node:crypto") | undefined;
function sha256Hex(base64: string): string {
  crypto ??= createRequire(import.meta.url)("node:crypto") as typeof import("node:crypto");
  return crypto.createHash("sha256").update(base64, "base64").digest("hex");
}

/** One stored content: its bytes as base64 and what they are. */
export interface StoredBlob {
  mediaType: string;
  data: string;
}

/** Where a store keeps a run's blobs: put and get by content hash, deleted with the run. */
export interface BlobStore {
  /** Keep the content under its hash for this run (storing the same hash twice is a no-op). */
  putBlob(runId: string, sha256: string, blob: StoredBlob): MaybePromise<void>;
  /** The content stored under this hash for this run, or undefined. */
  getBlob(runId: string, sha256: string): MaybePromise<StoredBlob | undefined>;
}

export function isBlobStore(value: unknown): value is BlobStore {
  return typeof value === "object" && value !== null && typeof (value as BlobStore).putBlob === "function" && typeof (value as BlobStore).getBlob === "function";
}

/** Inline content shorter than this (in base64 characters, about 3 KB of bytes) stays in the checkpoint: a reference would save little. */
export const MIN_BLOB_CHARS = 4096;

type Part = Record<string, unknown>;

/** The part's inline bytes when they are large enough to store apart, else undefined. */
function largeInline(part: Part): StoredBlob | undefined {
  if ((part["type"] !== "image" && part["type"] !== "file") || part["blob"] !== undefined) return undefined;
  const data = part["data"];
  const url = part["url"];
  // `data` needs its media type beside it; a data: URL names its own (an http URL has no bytes here).
  const large = typeof data === "string" ? data.length >= MIN_BLOB_CHARS && typeof part["mediaType"] === "string" && url === undefined : typeof url === "string" && url.length >= MIN_BLOB_CHARS;
  return large ? inlineData(part as MediaSource) : undefined;
}

/** A part that refers to stored content (and carries none of its own). */
function blobRefOf(value: Part): string | undefined {
  const blob = value["blob"];
  if ((value["type"] !== "image" && value["type"] !== "file") || typeof blob !== "string" || !BLOB_REF_PATTERN.test(blob)) return undefined;
  return value["data"] === undefined && value["url"] === undefined ? blob : undefined;
}

/**
 * `value` with each object `replace` returns something for swapped, the rest shared: only the
 * containers on the way to a replaced object are copied. The same object when nothing changed.
 */
function mapObjects(value: unknown, replace: (object: Part) => Part | undefined): unknown {
  if (typeof value !== "object" || value === null) return value;
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      const mapped = mapObjects(item, replace);
      if (mapped !== item) (copy ??= value.slice())[i] = mapped;
    }
    return copy ?? value;
  }
  const replaced = replace(value as Part);
  if (replaced !== undefined) return replaced;
  let copy: Part | undefined;
  for (const key in value) {
    const item = (value as Part)[key];
    const mapped = mapObjects(item, replace);
    if (mapped !== item) (copy ??= { ...(value as Part) })[key] = mapped;
  }
  return copy ?? value;
}

/**
 * One checkpointing actor's view of its run's blobs: which parts it has hashed (a part object is
 * hashed once, however many checkpoints hold it) and which blobs it has stored.
 */
export class BlobCollector {
  private readonly refs = new WeakMap<object, string>();
  private readonly stored = new Set<string>();
  private fresh: { sha256: string; blob: StoredBlob }[] = [];
  /** The last snapshot had parts stored apart: the next one is walked at once, not written twice. */
  private holding = false;

  /**
   * The snapshot as JSON text, its large inline images and files as references. A run without any
   * costs one text search: a snapshot without a `data` field or a `data:` URL is written as it is.
   */
  text(snapshot: unknown): string {
    if (!this.holding) {
      const text = JSON.stringify(snapshot);
      if (text.length < MIN_BLOB_CHARS || !(text.includes('"data":"') || text.includes('"url":"data:'))) return text;
    }
    const slim = this.slim(snapshot);
    this.holding = slim !== snapshot;
    return JSON.stringify(slim);
  }

  /** The snapshot with large inline parts replaced by references; the blobs not yet stored are kept for `take()`. */
  private slim<T>(snapshot: T): T {
    return mapObjects(snapshot, (part) => {
      const inline = largeInline(part);
      if (inline === undefined) return undefined;
      let ref = this.refs.get(part);
      if (ref === undefined) {
        ref = `sha256:${sha256Hex(inline.data)}`;
        this.refs.set(part, ref);
      }
      if (!this.stored.has(ref)) {
        this.stored.add(ref);
        this.fresh.push({ sha256: ref.slice("sha256:".length), blob: inline });
      }
      const { data: _data, url: _url, ...rest } = part;
      return { ...rest, mediaType: inline.mediaType, blob: ref };
    }) as T;
  }

  /** The blobs to store before the checkpoint that refers to them. */
  take(): { sha256: string; blob: StoredBlob }[] {
    const fresh = this.fresh;
    this.fresh = [];
    return fresh;
  }

  /** A store failed to keep them: they are offered again with the next checkpoint. */
  forget(sha256s: readonly string[]): void {
    for (const sha256 of sha256s) this.stored.delete(`sha256:${sha256}`);
  }
}

/** The content hashes a saved record refers to (a fork copies them to its own run: blobs are kept per run). */
export function blobHashesIn(value: unknown): string[] {
  const found = new Set<string>();
  mapObjects(value, (object) => {
    const ref = blobRefOf(object);
    if (ref !== undefined) found.add(ref.slice("sha256:".length));
    return undefined;
  });
  return [...found];
}

/** True when a saved snapshot still refers to stored content (it was not loaded through `resolveBlobs`). */
export function hasBlobRefs(value: unknown): boolean {
  let found = false;
  mapObjects(value, (object) => {
    if (!found && blobRefOf(object) !== undefined) found = true;
    return undefined;
  });
  return found;
}

/**
 * A saved record (or any part of one) with every reference replaced by the stored content, read
 * from `store` once per hash. A reference the store does not have is a `CheckpointError` naming it:
 * the checkpoint cannot be restored as it was saved.
 */
export async function resolveBlobs<T>(record: T, store: BlobStore, runId: string): Promise<T> {
  const wanted = new Set<string>();
  mapObjects(record, (object) => {
    const ref = blobRefOf(object);
    if (ref !== undefined) wanted.add(ref);
    return undefined;
  });
  if (wanted.size === 0) return record;
  const found = new Map<string, StoredBlob>();
  for (const ref of wanted) {
    const blob = await store.getBlob(runId, ref.slice("sha256:".length));
    if (blob === undefined) {
      throw new CheckpointError(runId, `the checkpoint of run ${runId} refers to stored content ${ref} that its store does not have (deleted, or written to another store): the run cannot be restored as it was saved`);
    }
    found.set(ref, blob);
  }
  return mapObjects(record, (object) => {
    const ref = blobRefOf(object);
    if (ref === undefined) return undefined;
    const { blob: _blob, ...rest } = object;
    return { ...rest, data: found.get(ref)!.data };
  }) as T;
}
