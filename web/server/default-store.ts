import { createRequire } from "node:module";
import type { CheckpointStore } from "../../machines/persistence/checkpoints/store.js";
import { isMissing, loadOptionalPeer, OptionalPeerMissingError } from "../../tools/optional-peer.js";

const ENTRY = "agentHandler's default store (SQLite)";

/**
 * The SQLite store `agentHandler` keeps runs in when it is given none. Its package is an optional
 * peer: checked when the handler is made (so a missing one fails there, with the fix, not as a 500
 * on every request), loaded on the first request that needs it.
 */
export function defaultStore(options: { path: string; keepFinishedMs?: number }): () => Promise<CheckpointStore & { close(): void }> {
  try {
    createRequire(import.meta.url).resolve("better-sqlite3");
  } catch (error) {
    if (!isMissing(error, "better-sqlite3")) throw error;
    const missing = new OptionalPeerMissingError(ENTRY, "better-sqlite3", "npm install better-sqlite3", { cause: error });
    missing.message += "; or pass store: false (runs kept in memory only) or a CheckpointStore of your own";
    throw missing;
  }
  let store: Promise<CheckpointStore & { close(): void }> | undefined;
  return () =>
    (store ??= loadOptionalPeer({ entry: ENTRY, packages: ["better-sqlite3"] }, () => import("../../machines/persistence/checkpoints/sqlite-store.js")).then(
      ({ SqliteCheckpointStore }) => new SqliteCheckpointStore(options),
    ));
}
