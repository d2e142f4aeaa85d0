import { hostname } from "node:os";
import { randomBytes } from "node:crypto";
import { z } from "zod";
import type { ReactMachine } from "../machines/react-machine.js";
import { errorText, RunQueueError } from "./errors.js";
import { executeRun, type Execution } from "./run-execution.js";
import { withThreadConversation } from "./thread-input.js";
import { withStoredBlobs } from "./run-blobs.js";
import type { RunStore } from "./run-store.js";
import { AgentNameSchema, firstIssue, type ClaimedRun } from "./schemas.js";
import type { WorkerEvent } from "./worker-events.js";
import type { RunObserver } from "./run-events.js";
import { sweepEveryMs, sweepFinishedRuns } from "../machines/persistence/log/finished-retention.js";

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
    /** Watches each claimed run's actor, e.g. to stream its events (jianmu/http's `storeRunEvents`). */
    observe: z.custom<RunObserver>((value) => typeof value === "function", "must be a function").optional(),
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
 * Runs signalled while a claim is on its way (undefined: every run). An event sent after the claim
 * read the inbox may be told before the run's execution exists here to be poked: for those runs the
 * claim's "inbox empty" no longer holds. Claims may overlap (the loop's, and those riding on
 * finishes), so each has its own record, kept until its runs have started.
 */
function signalsDuringClaims() {
  const open = new Set<Set<string | undefined>>();
  return {
    note: (runId: string | undefined) => {
      for (const seen of open) seen.add(runId);
    },
    claimSent: () => {
      const seen = new Set<string | undefined>();
      open.add(seen);
      return {
        stillEmpty: (runId: string) => !seen.has(runId) && !seen.has(undefined),
        /** The claim's runs have started (or it failed): stop recording for it. */
        close: () => void open.delete(seen),
      };
    },
  };
}
type ClaimMark = ReturnType<ReturnType<typeof signalsDuringClaims>["claimSent"]>;

/**
 * The claim loop's sleep, which a nudge (a signal, a run's end, stop) cuts short. A nudge that comes
 * while the loop is awake (its claim on the way, which may have looked before the signalled run was
 * written) is kept, and the next sleep returns at once: the loop claims again instead of waiting for
 * the next poll.
 */
function alarm() {
  let wake: (() => void) | undefined;
  let nudged = false;
  return {
    nudge: () => {
      const resolve = wake;
      wake = undefined;
      if (resolve) resolve();
      else nudged = true;
    },
    sleep: (ms: number) =>
      new Promise<void>((resolve) => {
        if (nudged) {
          nudged = false;
          return resolve();
        }
        const timer = setTimeout(() => {
          wake = undefined;
          resolve();
        }, ms);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      }),
  };
}

/** Tell the store the worker's agents, waiting out a database that cannot be reached (`unreachable` says so each time). */
async function registerWhenReachable(store: RunStore, names: string[], unreachable: (error: unknown, retryInMs: number) => void): Promise<void> {
  for (let backoff = 100; ; backoff = Math.min(backoff * 2, MAX_BACKOFF_MS)) {
    try {
      return await store.registerAgents(names);
    } catch (error) {
      if (!(error instanceof RunQueueError && error.problem === "connection")) throw error;
      unreachable(error, backoff);
      await new Promise((resolve) => setTimeout(resolve, backoff));
    }
  }
}

/**
 * Ready to claim: the store knows the agents (registerWhenReachable), and listens for other processes'
 * signals. The store's first LISTEN session tells every held run to look at its inbox: up before any
 * run is held, so that look is not made for nothing.
 */
async function readyToClaim(store: RunStore, names: string[], unreachable: (error: unknown, retryInMs: number) => void): Promise<void> {
  await registerWhenReachable(store, names, unreachable);
  await store.untilListening?.();
}

/** A claimed run as it starts: its stored images and files back in its checkpoint, then (a thread's run before its first checkpoint) the thread's conversation. */
async function loadClaimed(store: RunStore, claimed: ClaimedRun): Promise<{ run: ClaimedRun; problem?: string }> {
  const loaded = await withStoredBlobs(claimed, store);
  const run = await withThreadConversation(store, loaded.run);
  return loaded.problem !== undefined ? { run, problem: loaded.problem } : { run };
}

/** Stop every held run at its next checkpoint; past `timeoutMs`, give up the rest as they stand. */
async function stopAll(executions: Map<string, Execution>, timeoutMs: number): Promise<void> {
  const pending = [...executions.values()];
  for (const execution of pending) execution.stopGracefully();
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)));
  await Promise.race([Promise.all(pending.map((e) => e.done)), timedOut]);
  clearTimeout(timer);
  for (const execution of executions.values()) execution.abandon("the worker stopped before the run reached a checkpoint");
  await Promise.all(pending.map((e) => e.done));
}

/**
 * A worker: claims runnable runs of the agents it knows, executes them with their machines, and
 * checkpoints them in the store at every stable state. Several workers (processes, machines) share one
 * store; leases and fencing tokens keep one owner per run.
 *
 * Resolves once the store knows the worker's agents (`worker.started`), so a submit made after it
 * is never refused for an unknown agent, and once the store listens for other processes' signals
 * (PostgreSQL's LISTEN, `untilListening`; at most 2 s, then polling finds work until it comes up).
 * While the database cannot be reached it keeps trying (`worker.error` events, backoff up to 5 s);
 * bad options and other failures reject.
 */
export async function startWorker(options: WorkerOptions): Promise<Worker> {
  const parsed = WorkerOptionsSchema.safeParse(options);
  if (!parsed.success) throw new RunQueueError("invalid_input", `startWorker: ${firstIssue(parsed.error, "options")}`);
  const { store, agents, concurrency, leaseMs, pollMs } = parsed.data;
  const { onEvent, observe } = parsed.data;
  const id = parsed.data.id ?? `${hostname()}:${process.pid}:${randomBytes(3).toString("hex")}`;
  const names = Object.keys(agents);
  const executions = new Map<string, Execution>();
  let stopping = false;
  const { nudge, sleep } = alarm();

  const emit = (event: WorkerEvent) => {
    try {
      onEvent?.(event);
    } catch {
      // An observer's failure is not the run's.
    }
  };
  const signalled = signalsDuringClaims();
  const unsubscribe = store.subscribe((signal) => {
    // Another process wrote (SQLite): a free slot may have something to claim. Held runs look at their inbox at their heartbeat, as before.
    if (signal.kind === "changed") return nudge();
    if (signal.kind !== "runnable") return;
    signalled.note(signal.runId);
    // Only the run the signal names has something new in its inbox (a new run is not held yet).
    if (signal.runId !== undefined) executions.get(signal.runId)?.poke();
    else for (const execution of executions.values()) execution.poke();
    nudge();
  });

  try {
    await readyToClaim(store, names, (error, retryInMs) => emit({ type: "worker.error", worker: id, message: errorText(error), retryInMs }));
  } catch (error) {
    unsubscribe();
    throw error;
  }
  emit({ type: "worker.started", worker: id, agents: names });
  // With the store's keepFinishedMs, finished runs are deleted as they age (a sweep of at most 100 runs, apart from claims).
  const sweeps = sweepFinishedRuns(store, (error) => emit({ type: "worker.error", worker: id, message: `pruning finished runs: ${errorText(error)}`, retryInMs: sweepEveryMs(store.keepFinishedMs ?? 0) }));

  /** Executions whose finish claimed for the slot it freed: their end needs no claim of the loop's. */
  const claimedAtFinish = new WeakSet<Execution>();
  /** The claim that rides on a finish (RunStore.finishAndClaim): for the slot the finishing run frees. */
  const nextAtFinish = (runId: string, execution: () => Execution) => () => {
    // The finishing run's slot is free once it is written (a run that failed to start holds none yet).
    const limit = concurrency - executions.size + (executions.has(runId) ? 1 : 0);
    if (stopping || limit < 1) return undefined;
    const mark = signalled.claimSent();
    return {
      request: { owner: id, agents: names, limit, leaseMs },
      settle: (runs: ClaimedRun[] | undefined) => {
        if (runs !== undefined) claimedAtFinish.add(execution());
        return takeAll(runs ?? [], mark);
      },
    };
  };

  /** A claimed run given back without starting it (a failed write only lets its lease run out). */
  const handBack = (run: ClaimedRun): Promise<void> => store.release(run.runId, run.token).then(() => undefined, () => undefined);

  /** `mark`: the claim that returned the run; none for a run started late (after a stale execution stopped), whose claim's inbox answer no longer holds. */
  const start = async (claimed: ClaimedRun, mark: ClaimMark | undefined) => {
    const loaded = await loadClaimed(store, claimed).catch((error: unknown) => {
      // The store could not be read (a connection fault): the run goes back for a later claim, as any held run's fault does.
      emit({ type: "worker.error", worker: id, message: errorText(error), retryInMs: 0 });
      return handBack(claimed);
    });
    if (!loaded) return;
    let { run } = loaded;
    if (run.inboxEmpty && !mark?.stillEmpty(run.runId)) run = { ...run, inboxEmpty: false };
    const common = { store, run, worker: id, leaseMs, emit, agentEvents: onEvent !== undefined, next: nextAtFinish(run.runId, () => execution) };
    const execution: Execution = executeRun({ ...common, machine: agents[run.agent]!, ...(loaded.problem !== undefined ? { blobProblem: loaded.problem } : {}), ...(observe ? { observe } : {}) });
    executions.set(run.runId, execution);
    void execution.done.then(() => {
      if (executions.get(run.runId) === execution) executions.delete(run.runId);
      // A finish that claimed has filled the slot, or found the queue empty: nothing for the loop to claim.
      if (!claimedAtFinish.has(execution)) nudge();
    });
  };

  /** Start what a claim returned (a run still held here under an older token is stopped first). */
  const take = async (run: ClaimedRun, mark: ClaimMark) => {
    // Claimed while the worker began to stop (a finish's claim, or the loop's in flight): handed back at once.
    if (stopping) return handBack(run);
    const previous = executions.get(run.runId);
    if (!previous) return start(run, mark);
    // Still running here under an older token: its lease ran out before this worker renewed it
    // (a long pause). That execution is stale; stop it and run the new claim once it has stopped.
    previous.abandon("its lease ran out before this worker renewed it, and this worker claimed it again");
    // A worker stopping meanwhile hands the new claim back instead of starting it.
    void previous.done.then(() => (stopping ? handBack(run) : start(run, undefined)));
  };

  const takeAll = async (runs: readonly ClaimedRun[], mark: ClaimMark) => {
    try {
      for (const run of runs) await take(run, mark);
    } finally {
      mark.close();
    }
  };

  const loop = async () => {
    let backoff = 100;
    while (!stopping) {
      try {
        const free = concurrency - executions.size;
        if (free > 0) {
          const mark = signalled.claimSent();
          let claimed: ClaimedRun[] = [];
          try {
            claimed = await store.claim({ owner: id, agents: names, limit: free, leaseMs });
          } finally {
            await takeAll(claimed, mark);
          }
          backoff = 100;
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
      sweeps.stop();
      await stopAll(executions, stopOptions.timeoutMs ?? leaseMs);
      unsubscribe();
      emit({ type: "worker.stopped", worker: id });
    },
  };
}
