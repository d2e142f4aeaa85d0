/** What `jianmu/sqlite` loads once better-sqlite3 is known to be there (see sqlite.ts). */
export { SqliteCheckpointStore } from "./sqlite-store.js";
export type { SqliteCheckpointStoreOptions } from "./sqlite-store.js";
export { SqliteRunStore } from "../../../queue/sqlite/store.js";
export type { SqliteRunStoreOptions } from "../../../queue/sqlite/store.js";
