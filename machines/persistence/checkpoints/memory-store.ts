import type { ToolOutcome } from "../../../actors/tool-executor.js";
import { MemoryToolJournal, type JournalEntry, type JournalKey, type ToolJournal } from "../../../actors/tool-journal.js";
import { readPersisted, type PersistedAgent } from "../persistence.js";
import { checkRecordId, summaryOf, type CheckpointStore, type CheckpointSummary } from "./store.js";
import type { BlobStore, StoredBlob } from "../blobs.js";
import { MemoryBlobTable } from "./memory-blobs.js";

/**
 * Checkpoints and a tool journal in memory, for tests and short-lived processes. Records are kept
 * as JSON text, so what `load` returns is a copy that went through the same round trip as a real store's.
 */
export class MemoryCheckpointStore implements CheckpointStore, ToolJournal, BlobStore {
  private readonly records = new Map<string, { summary: CheckpointSummary; text: string }>();
  private readonly journal = new MemoryToolJournal();
  private readonly blobs = new MemoryBlobTable();

  save(runId: string, record: PersistedAgent): void {
    checkRecordId(runId, record);
    this.records.set(runId, { summary: summaryOf(record), text: JSON.stringify(record) });
  }

  load(runId: string): PersistedAgent | undefined {
    const found = this.records.get(runId);
    return found ? readPersisted(found.text) : undefined;
  }

  list(): CheckpointSummary[] {
    return [...this.records.values()].map((r) => ({ ...r.summary })).sort((a, b) => b.savedAt - a.savedAt);
  }

  delete(runId: string): boolean {
    this.journal.forget(runId);
    this.blobs.forget(runId);
    return this.records.delete(runId);
  }

  putBlob(runId: string, sha256: string, blob: StoredBlob): void {
    this.blobs.put(runId, sha256, blob);
  }

  getBlob(runId: string, sha256: string): StoredBlob | undefined {
    return this.blobs.get(runId, sha256);
  }

  started(key: JournalKey, name: string): boolean {
    return this.journal.started(key, name);
  }

  completed(key: JournalKey, outcome: ToolOutcome): void {
    this.journal.completed(key, outcome);
  }

  lookup(key: JournalKey): JournalEntry | undefined {
    return this.journal.lookup(key);
  }

  forget(runId: string): void {
    this.journal.forget(runId);
  }
}
