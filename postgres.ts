/**
 * jianmu/postgres: the durable run queue on PostgreSQL (`pg` is an optional peer dependency; `import "jianmu"`
 * never loads this file). Several worker processes on several machines share one database.
 */
import { loadOptionalPeer } from "./tools/optional-peer.js";
import type * as Postgres from "./queue/postgres/store.js";

// Only the store imports pg: loaded so that a missing package is one clear error naming the install command.
const postgres: typeof Postgres = await loadOptionalPeer({ entry: "jianmu/postgres", packages: ["pg"] }, () => import("./queue/postgres/store.js"));

export const { PostgresRunStore } = postgres;
export type PostgresRunStore = Postgres.PostgresRunStore;
export type { PostgresRunStoreOptions } from "./queue/postgres/options.js";
export { startWorker } from "./queue/worker.js";
export type { Worker, WorkerOptions } from "./queue/worker.js";
export type { WorkerEvent } from "./queue/worker-events.js";
export type { RunStore, QueueSignal, ClaimRequest } from "./queue/run-store.js";
export { RunQueueError, FencedError, RunGivenUpError, RUN_QUEUE_PROBLEMS } from "./queue/errors.js";
export type { RunQueueProblem } from "./queue/errors.js";
export { QUEUE_STATUSES, QueueStatusSchema, RunStatusInfoSchema, RunSummarySchema, RunCommandSchema, SubmitSchema, ListOptionsSchema } from "./queue/schemas.js";
export type { QueueStatus, RunStatusInfo, RunSummary, RunCommand, SubmitRequest, ListOptions, RunInput } from "./queue/schemas.js";
export { OptionalPeerMissingError } from "./tools/optional-peer.js";
