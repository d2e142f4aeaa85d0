import type Database from "better-sqlite3";
import type { StoredBlob } from "../blobs.js";

/**
 * A run's blobs in one SQLite table (the SQLite stores' `BlobStore` half): the bytes as a BLOB,
 * a quarter smaller than their base64, keyed by run and content hash. Created with the store's tables.
 */
export class SqliteBlobTable {
  private readonly statements;

  constructor(db: Database.Database, table: string) {
    db.exec(`CREATE TABLE IF NOT EXISTS ${table} (
  run_id TEXT NOT NULL, sha256 TEXT NOT NULL, media_type TEXT NOT NULL, data BLOB NOT NULL,
  PRIMARY KEY (run_id, sha256)
)`);
    this.statements = {
      put: db.prepare<[string, string, string, Buffer]>(`INSERT INTO ${table} (run_id, sha256, media_type, data) VALUES (?, ?, ?, ?) ON CONFLICT (run_id, sha256) DO NOTHING`),
      get: db.prepare<[string, string], { media_type: string; data: Buffer }>(`SELECT media_type, data FROM ${table} WHERE run_id = ? AND sha256 = ?`),
      forget: db.prepare<[string]>(`DELETE FROM ${table} WHERE run_id = ?`),
    };
  }

  put(runId: string, sha256: string, blob: StoredBlob): void {
    this.statements.put.run(runId, sha256, blob.mediaType, Buffer.from(blob.data, "base64"));
  }

  get(runId: string, sha256: string): StoredBlob | undefined {
    const row = this.statements.get.get(runId, sha256);
    return row ? { mediaType: row.media_type, data: row.data.toString("base64") } : undefined;
  }

  forget(runId: string): void {
    this.statements.forget.run(runId);
  }
}
