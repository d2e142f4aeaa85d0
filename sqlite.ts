/**
 * jianmu/sqlite: the embedded stores on SQLite (one machine, several processes). `import "jianmu"` never loads this file.
 */
export { SqliteRunStore } from "./queue/sqlite/store.js";
export type { SqliteRunStoreOptions } from "./queue/sqlite/store.js";
export { MemoryRunStore } from "./queue/memory-store.js";
export { startWorker } from "./queue/worker.js";
export type { Worker, WorkerOptions } from "./queue/worker.js";
export type { WorkerEvent } from "./queue/worker-events.js";
export type { RunStore, QueueSignal } from "./queue/run-store.js";
export { RunQueueError, FencedError } from "./queue/errors.js";
export type { QueueStatus, RunStatusInfo, RunSummary, RunCommand, SubmitRequest, ListOptions } from "./queue/schemas.js";
