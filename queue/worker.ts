import { hostname } from "node:os";
import { randomBytes } from "node:crypto";
import { z } from "zod";
import type { ReactMachine } from "../machines/react-machine.js";
import { errorText, RunQueueError } from "./errors.js";
import { executeRun, type Execution } from "./run-execution.js";
import { withThreadConversation } from "./thread-input.js";
import { withStoredBlobs } from "./run-blobs.js";
import type { RunStore } from "./run-store.js";
import { AgentNameSchema, firstIssue } from "./schemas.js";
import type { WorkerEvent } from "./worker-events.js";

const WorkerOptionsSchema = z
  .object({
    store: z.custom<RunStore>(
      (value) => typeof value === "object" && value !== null && typeof (value as RunStore).claim === "function",
      "must be a run store (PostgresRunStore.connect(...), new SqliteRunStore(...) or new MemoryRunStore())",
    ),
    agents: z
      .record(AgentNameSchema, z.custom<ReactMachine>((value) => typeof value === "object" && value !== null && "config" in value, "must be a machine from createReactMachine(...)"))
      .refine((agents) => Object.keys(agents).length > 0, "must name at least one agent, e.g. { support: createReactMachine(...) }"),
    /** Runs executed at once by this worker. */
    concurrency: z.number().int().min(1).max(1_000).default(4),
    /** How long a claim lasts without renewal; a worker that stops renewing loses its runs after this. */
    leaseMs: z.number().int().min(200).default(30_000),
    /** How often to look for work when no notification came (notifications are a shortcut, polling the guarantee). */
    pollMs: z.number().int().min(10).default(1_000),
    onEvent: z.custom<(event: WorkerEvent) => void>((value) => typeof value === "function", "must be a function").optional(),
    /** Names this worker in leases and `status().owner` (default: host:pid:random). */
    id: z.string().min(1).max(200).optional(),
  })
  .strict();
export type WorkerOptions = z.input<typeof WorkerOptionsSchema>;

export interface Worker {
  readonly id: string;
  /** Runs this worker holds right now. */
  readonly active: number;
  /**
   * Stop claiming; let each held run reach its next checkpoint (or park, or finish) and release its
   * lease so another worker resumes it. After `timeoutMs` (default: the lease) the rest are given up
   * as they stand (their leases expire). Resolves when nothing is held.
   */
  stop(options?: { timeoutMs?: number }): Promise<void>;
}

const MAX_BACKOFF_MS = 5_000;

/**
 * A worker: claims runnable runs of the agents it knows, executes them with their machines, and
 * checkpoints them in the store at every stable state. Several workers (processes, machines) share one
 * store; leases and fencing tokens keep one owner per run.
 */
export function startWorker(options: WorkerOptions): Worker {
  const parsed = WorkerOptionsSchema.safeParse(options);
  if (!parsed.success) throw new RunQueueError("invalid_input", `startWorker: ${firstIssue(parsed.error, "options")}`);
  const { store, agents, concurrency, leaseMs, pollMs } = parsed.data;
  const onEvent = parsed.data.onEvent;
  const id = parsed.data.id ?? `${hostname()}:${process.pid}:${randomBytes(3).toString("hex")}`;
  const names = Object.keys(agents);
  const executions = new Map<string, Execution>();
  let stopping = false;
  let wake: (() => void) | undefined;

  const emit = (event: WorkerEvent) => {
    try {
      onEvent?.(event);
    } catch {
      // An observer's failure is not the run's.
    }
  };
  const nudge = () => {
    const resolve = wake;
    wake = undefined;
    resolve?.();
  };
  const unsubscribe = store.subscribe((signal) => {
    if (signal.kind === "runnable") {
      for (const execution of executions.values()) execution.poke();
      nudge();
    }
  });

  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        wake = undefined;
        resolve();
      }, ms);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });

  const loop = async () => {
    let backoff = 100;
    let registered = false;
    while (!stopping) {
      try {
        if (!registered) {
          await store.registerAgents(names);
          registered = true;
          emit({ type: "worker.started", worker: id, agents: names });
        }
        const free = concurrency - executions.size;
        if (free > 0) {
          const claimed = await store.claim({ owner: id, agents: names, limit: free, leaseMs });
          backoff = 100;
          for (const claimedRun of claimed) {
            if (executions.has(claimedRun.runId)) continue;
            // Stored images and files back into the checkpoint, then (a thread's run before its first checkpoint) the thread's conversation.
            const { run: withBlobs, problem } = await withStoredBlobs(claimedRun, store);
            // Loading a thread's conversation failed (the database is away): the lease runs out and the run is claimed again.
            const run = await withThreadConversation(store, withBlobs).catch((error: unknown) => {
              emit({ type: "worker.error", worker: id, message: errorText(error), retryInMs: leaseMs });
              return undefined;
            });
            if (!run) continue;
            const execution = executeRun({ store, machine: agents[run.agent]!, run, worker: id, leaseMs, emit, ...(problem !== undefined ? { blobProblem: problem } : {}) });
            executions.set(run.runId, execution);
            void execution.done.then(() => {
              if (executions.get(run.runId) === execution) executions.delete(run.runId);
              nudge();
            });
          }
          // A full batch: there may be more waiting.
          if (claimed.length === free && free > 0) {
            // Let timers and I/O in between batches (an in-memory store answers without any).
            await new Promise((resolve) => setImmediate(resolve));
            continue;
          }
        }
        await sleep(pollMs);
      } catch (error) {
        emit({ type: "worker.error", worker: id, message: errorText(error), retryInMs: backoff });
        await sleep(backoff);
        backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
      }
    }
  };
  const looping = loop();

  return {
    id,
    get active() {
      return executions.size;
    },
    async stop(stopOptions = {}) {
      if (!stopping) {
        stopping = true;
        nudge();
      }
      await looping;
      const pending = [...executions.values()];
      for (const execution of pending) execution.stopGracefully();
      const timeoutMs = stopOptions.timeoutMs ?? leaseMs;
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)));
      await Promise.race([Promise.all(pending.map((e) => e.done)), timedOut]);
      clearTimeout(timer);
      for (const execution of executions.values()) execution.abandon("the worker stopped before the run reached a checkpoint");
      await Promise.all(pending.map((e) => e.done));
      unsubscribe();
      emit({ type: "worker.stopped", worker: id });
    },
  };
}
