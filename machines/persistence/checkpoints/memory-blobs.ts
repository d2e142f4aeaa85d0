import type { StoredBlob } from "../blobs.js";

/** A run's blobs in memory, by run id and content hash (the memory stores' `BlobStore` half). */
export class MemoryBlobTable {
  private readonly runs = new Map<string, Map<string, StoredBlob>>();

  put(runId: string, sha256: string, blob: StoredBlob): void {
    let blobs = this.runs.get(runId);
    if (!blobs) this.runs.set(runId, (blobs = new Map()));
    if (!blobs.has(sha256)) blobs.set(sha256, { mediaType: blob.mediaType, data: blob.data });
  }

  get(runId: string, sha256: string): StoredBlob | undefined {
    const blob = this.runs.get(runId)?.get(sha256);
    return blob ? { ...blob } : undefined;
  }

  forget(runId: string): void {
    this.runs.delete(runId);
  }
}
