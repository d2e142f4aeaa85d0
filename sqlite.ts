/**
/**
 * `jianmu/sqlite`: the embedded stores on SQLite (one machine, several processes): checkpoints
 * (`SqliteCheckpointStore`) and the run queue (`SqliteRunStore`, with `startWorker`). Needs the optional
 * package better-sqlite3 (`npm install better-sqlite3`); `jianmu` itself never loads it.
 *
 * Everything that imports better-sqlite3 is loaded through `loadOptionalPeer` below, so a missing
 * package is one clear error: add a new SQLite module to the list loaded there, not as a static import here.
 */
import { loadOptionalPeer } from "./tools/optional-peer.js";
import type * as Checkpoints from "./machines/persistence/checkpoints/sqlite-store.js";
import type * as Runs from "./queue/sqlite/store.js";

const [checkpoints, runs]: [typeof Checkpoints, typeof Runs] = await loadOptionalPeer({ entry: "jianmu/sqlite", packages: ["better-sqlite3"] }, () =>
  Promise.all([import("./machines/persistence/checkpoints/sqlite-store.js"), import("./queue/sqlite/store.js")]),
);

export const { SqliteCheckpointStore } = checkpoints;
export const { SqliteRunStore } = runs;
export type SqliteCheckpointStore = Checkpoints.SqliteCheckpointStore;
export type SqliteRunStore = Runs.SqliteRunStore;
export type { SqliteCheckpointStoreOptions } from "./machines/persistence/checkpoints/sqlite-store.js";
export type { SqliteRunStoreOptions } from "./queue/sqlite/store.js";
export { OptionalPeerMissingError } from "./tools/optional-peer.js";
// The run queue's parts that need no SQLite: an in-memory store (tests, one process) and the worker.
export { MemoryRunStore } from "./queue/memory-store.js";
export { startWorker } from "./queue/worker.js";
export type { Worker, WorkerOptions } from "./queue/worker.js";
export type { WorkerEvent } from "./queue/worker-events.js";
export type { RunStore, QueueSignal, ClaimRequest } from "./queue/run-store.js";
export { RunQueueError, FencedError, RunGivenUpError } from "./queue/errors.js";
export type { QueueStatus, RunStatusInfo, RunSummary, RunCommand, SubmitRequest, ListOptions } from "./queue/schemas.js";
