/**
 * `jianmu/sqlite`: SQLite-backed durability (`SqliteCheckpointStore`). Needs the optional package
 * better-sqlite3 (`npm install better-sqlite3`); `jianmu` itself never loads it.
 *
 * Everything that imports better-sqlite3 is loaded through `loadOptionalPeer` below, so a missing
 * package is one clear error: add new SQLite exports to `machines/checkpoints/sqlite-parts.ts`, not as a static import here.
 */
import { loadOptionalPeer } from "./tools/optional-peer.js";
import type * as Sqlite from "./machines/checkpoints/sqlite-parts.js";

const sqlite: typeof Sqlite = await loadOptionalPeer({ entry: "jianmu/sqlite", packages: ["better-sqlite3"] }, () => import("./machines/checkpoints/sqlite-parts.js"));

export const { SqliteCheckpointStore } = sqlite;
export type SqliteCheckpointStore = Sqlite.SqliteCheckpointStore;
export type { SqliteCheckpointStoreOptions } from "./machines/checkpoints/sqlite-parts.js";
export { OptionalPeerMissingError } from "./tools/optional-peer.js";
