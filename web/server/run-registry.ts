import { AgentInputError, type AgentInput } from "../../machines/contract/context.js";
import { StateError } from "../../machines/contract/state-access.js";
import type { CheckpointStore } from "../../machines/persistence/checkpoints/store.js";
import { restoreAgent, type PersistedAgent } from "../../machines/persistence/persistence.js";
import { abandonThreadRun, startThreadRun, ThreadBusyError } from "../../machines/persistence/log/threads.js";
import type { ReactMachine } from "../../machines/react-machine.js";
import type { RunSnapshot } from "../protocol.js";
import { HttpError, loggedFailure } from "./errors.js";
import { LiveRun } from "./live-run.js";
import { runSnapshotOf, type SnapshotLike } from "./run-view.js";
import { loadCheckpoint } from "../../machines/persistence/checkpoints/load-checkpoint.js";
import { sweepFinishedRuns } from "../../machines/persistence/log/finished-retention.js";

/** A run the handler knows: held live by this process, or only as a finished checkpoint. */
export type FoundRun = { kind: "live"; run: LiveRun } | { kind: "stored"; view: RunSnapshot };

export interface RunRegistryOptions {
  agents: Readonly<Record<string, ReactMachine>>;
  store: () => Promise<CheckpointStore | undefined>;
  /** How long a finished run stays in memory for late followers (then it is read from the store). */
  retainFinishedMs: number;
  /** At most this many finished runs stay in memory; past it the longest finished goes first. */
  maxFinishedRuns: number;
  /**
   * A run waiting for approval with no one following it is let go after this long: its checkpoint
   * is in the store, and the next request for it restores it. Undefined: kept in memory.
   */
  releaseParkedMs: number | undefined;
  onError: (error: Error) => void;
}

/**
 * The runs of one handler. A run id this process does not hold is looked up in the store: a run
 * that was parked (or interrupted) by another process is restored here and continues, so a server
 * restart loses nothing that was checkpointed.
 */
export class RunRegistry {
  private readonly live = new Map<string, LiveRun>();
  /** The finished runs still held, oldest first, each with the timer that lets it go. */
  private readonly finished = new Map<string, ReturnType<typeof setTimeout>>();
  /** Ids of finished runs let go from memory, so a late request hears "expired", not "never existed". */
  private readonly expired: ExpiredRuns;
  private readonly restoring = new Map<string, Promise<FoundRun | undefined>>();

  private readonly sweeper: ReturnType<typeof setInterval> | undefined;
  /** With a store that has `keepFinishedMs`: its finished runs are pruned as they age (started on the store's first use). */
  private finishedSweeps: { stop(): void } | undefined;

  constructor(private readonly options: RunRegistryOptions) {
    this.expired = new ExpiredRuns(Math.max(1_000, options.maxFinishedRuns * 10));
    const after = options.releaseParkedMs;
    if (after !== undefined) {
      this.sweeper = setInterval(() => this.releaseParked(after), Math.max(50, Math.min(after / 2, 30_000)));
      (this.sweeper as { unref?: () => void }).unref?.();
    }
  }

  async start(agent: string, given: AgentInput): Promise<LiveRun> {
    const machine = this.options.agents[agent]!;
    const store = await this.store();
    let run: LiveRun;
    let input = given;
    try {
      // A thread's next run starts from the thread's conversation (runs of one thread never interleave: a busy thread is a 409).
      input = await startThreadRun(store, given, machine.id);
      run = new LiveRun({ agent, machine, ...(store ? { store } : {}), start: { input }, onError: this.options.onError });
    } catch (error) {
      await abandonThreadRun(store, input).catch(() => undefined);
      if (error instanceof ThreadBusyError) throw new HttpError(409, "thread_busy", error.message, "threadId");
      // The body fit the protocol but not this agent (e.g. a `state` its schema refuses): nothing started.
      if (error instanceof AgentInputError || error instanceof StateError) {
        const field = error instanceof StateError ? `state.${error.field}` : error.field.replace(/^input\./, "");
        throw new HttpError(400, "invalid_body", error.message, field);
      }
      throw error;
    }
    this.hold(run);
    return run.start();
  }

  async find(runId: string): Promise<FoundRun | undefined> {
    const held = this.live.get(runId);
    if (held) return { kind: "live", run: held };
    const pending = this.restoring.get(runId);
    if (pending) return pending;
    const lookup = this.load(runId)
      .then((found) => {
        if (found || !this.expired.has(runId)) return found;
        throw new HttpError(410, "run_expired", `run ${runId} has finished and is no longer kept (a finished run is held for retainFinishedMs, at most maxFinishedRuns of them; a store keeps it for its keepFinishedMs)`);
      })
      .finally(() => this.restoring.delete(runId));
    this.restoring.set(runId, lookup);
    return lookup;
  }

  /** `find`, or the handler's 404 for a run it does not know. */
  async findOr404(runId: string): Promise<FoundRun> {
    const found = await this.find(runId);
    if (!found) throw new HttpError(404, "unknown_run", `there is no run ${JSON.stringify(runId)} (it never started here, or its checkpoint was deleted)`);
    return found;
  }

  /** Listeners on the logs of the runs held here (for tests and metrics). */
  followers(): number {
    let count = 0;
    for (const run of this.live.values()) count += run.log.followers;
    return count;
  }

  /** How many runs this process holds: live ones (running or parked) and finished ones kept for late followers. */
  held(): { live: number; finished: number } {
    return { live: this.live.size - this.finished.size, finished: this.finished.size };
  }

  /** Stop every live run; parked and running runs stay in the store for the next process. */
  stopAll(): void {
    if (this.sweeper !== undefined) clearInterval(this.sweeper);
    this.finishedSweeps?.stop();
    for (const run of this.live.values()) run.stop();
    this.live.clear();
    for (const timer of this.finished.values()) clearTimeout(timer);
    this.finished.clear();
  }

  /** Parked runs cost no memory: the ones idle for `after` ms are stopped (their checkpoints stay). */
  private releaseParked(after: number): void {
    const idle = (run: LiveRun) => run.active && run.log.followers === 0 && Date.now() - run.log.lastActivity >= after && run.view().status === "awaitingApproval";
    for (const run of [...this.live.values()]) {
      if (!idle(run)) continue;
      run.flush().then(
        () => {
          // Checked again after the (maybe asynchronous) flush; from here to stop() nothing else runs.
          if (this.live.get(run.runId) !== run || !idle(run)) return;
          this.live.delete(run.runId);
          run.stop();
        },
        (error: unknown) => this.options.onError(error instanceof Error ? error : new Error(String(error))),
      );
    }
  }

  private hold(run: LiveRun): void {
    this.live.set(run.runId, run);
    run.actor.subscribe({
      complete: () => this.release(run),
      error: () => this.release(run),
    });
  }

  /** A finished run is kept for late followers until `retainFinishedMs` passes or `maxFinishedRuns` newer ones push it out. */
  private release(run: LiveRun): void {
    if (this.live.get(run.runId) !== run || this.finished.has(run.runId)) return;
    const timer = setTimeout(() => this.forget(run.runId), this.options.retainFinishedMs);
    (timer as { unref?: () => void }).unref?.();
    this.finished.set(run.runId, timer);
    for (const oldest of this.finished.keys()) {
      if (this.finished.size <= this.options.maxFinishedRuns) break;
      this.forget(oldest);
    }
  }

  private forget(runId: string): void {
    clearTimeout(this.finished.get(runId));
    this.finished.delete(runId);
    this.live.delete(runId);
    this.expired.add(runId);
  }

  private async store(): Promise<CheckpointStore | undefined> {
    const store = await this.options.store();
    this.finishedSweeps ??= sweepFinishedRuns(store, this.options.onError);
    return store;
  }

  private async load(runId: string): Promise<FoundRun | undefined> {
    const store = await this.store();
    if (!store) return undefined;
    let record: PersistedAgent | undefined;
    try {
      record = await loadCheckpoint(store, runId);
    } catch (error) {
      // The store's message may name the database (host, user, password in a URL): logged, not answered.
      throw loggedFailure("store_failed", `run ${runId} could not be read from the store`, error, this.options.onError);
    }
    if (!record) return undefined;
    const agent = Object.keys(this.options.agents).find((name) => this.options.agents[name]!.id === record.machine);
    if (agent === undefined) {
      throw new HttpError(404, "unknown_run", `run ${runId} belongs to machine "${record.machine}", which no agent of this handler is`);
    }
    const machine = this.options.agents[agent]!;
    if (record.status === "succeeded" || record.status === "failed") {
      return { kind: "stored", view: runSnapshotOf(agent, machine, record.snapshot as unknown as SnapshotLike) };
    }
    let snapshot;
    try {
      snapshot = restoreAgent(machine, record);
    } catch (error) {
      throw loggedFailure("store_failed", `run ${runId} cannot be restored`, error, this.options.onError);
    }
    const run = new LiveRun({ agent, machine, store, start: { snapshot }, onError: this.options.onError });
    this.hold(run);
    run.start();
    return { kind: "live", run };
  }
}

/** A bounded set of ids, the oldest dropped first: remembering expired runs must not grow without bound either. */
class ExpiredRuns {
  private readonly ids = new Set<string>();
  constructor(private readonly capacity: number) {}

  add(runId: string): void {
    this.ids.delete(runId);
    this.ids.add(runId);
    for (const oldest of this.ids) {
      if (this.ids.size <= this.capacity) break;
      this.ids.delete(oldest);
    }
  }

  has(runId: string): boolean {
    return this.ids.has(runId);
  }
}
