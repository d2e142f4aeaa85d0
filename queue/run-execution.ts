import { createActor, type Actor } from "xstate";
import { pendingApprovals } from "../machines/contract/approvals.js";
import { checkpointAgent, type CheckpointHandle } from "../machines/persistence/checkpoints/checkpoint-agent.js";
import type { CheckpointStore } from "../machines/persistence/checkpoints/store.js";
import type { BlobStore } from "../machines/persistence/blobs.js";
import type { AgentContext, AgentOutput } from "../machines/contract/context.js";
import type { AgentEmitted } from "../machines/contract/events.js";
import { restoreAgent, runStatusOf, type PersistedAgent } from "../machines/persistence/persistence.js";
import { toolProvidersClosed, type ReactMachine } from "../machines/react-machine.js";
import { STATE_TAGS, tagsAt } from "../machines/contract/state-tags.js";
import { markUnheard } from "../machines/chart/audience.js";
import { startsOver } from "./fresh-start.js";
import { errorText, FencedError, RunQueueError } from "./errors.js";
import { failedOutput, type ClaimRequest, type RunStore } from "./run-store.js";
import type { ClaimedRun, InboxEvent } from "./schemas.js";
import type { WorkerEvent } from "./worker-events.js";
import type { RunObservation, RunObserver } from "./run-events.js";

export interface ExecutionOptions {
  store: RunStore;
  machine: ReactMachine;
  run: ClaimedRun;
  worker: string;
  leaseMs: number;
  emit: (event: WorkerEvent) => void;
  /** Why the checkpoint's stored images and files could not be read back (`withStoredBlobs`): the run cannot start. */
  blobProblem?: string;
  /** Watches the run's actor (queue/run-events.ts); flushed before the output is written, closed after it. */
  observe?: RunObserver;
  /** Someone hears the agent's own events (the worker's `onEvent`); otherwise, with no observer either, they are not built. */
  agentEvents: boolean;
  /**
   * At the finish, a claim for the slot the run frees, written with the output when the store can
   * (`RunStore.finishAndClaim`): undefined when the worker wants none. `settle` is called once, with
   * the runs claimed, or undefined when no claim was made; the run is done once they have started.
   */
  next?: () => { request: ClaimRequest; settle: (runs: ClaimedRun[] | undefined) => Promise<void> } | undefined;
}

export interface Execution {
  readonly runId: string;
  /** Settles when this worker is done with the run: finished, parked, released, fenced or abandoned. */
  readonly done: Promise<void>;
  /** Stop at the next checkpoint (or park, or finish) and release the lease. */
  stopGracefully(): void;
  /** Give the run up now without writing (the lease expires; the last checkpoint stays). */
  abandon(reason: string): void;
  /** Look at the inbox now (a notification said something arrived). */
  poke(): void;
}

type AgentActor = Actor<ReactMachine>;

/** A run whose approval deadline is nearer than this is kept, not parked. */
const PARK_MARGIN_MS = 250;

/**
 * One claimed run on this worker: restore (or start) its actor, checkpoint every stable state with the
 * run's fencing token, renew the lease, deliver inbox events, and hand the run back when it parks,
 * finishes or the worker stops. Any write that finds another token ends it here at once.
 */
export function executeRun(options: ExecutionOptions): Execution {
  const execution = new RunExecution(options);
  execution.start();
  return execution;
}

/** The state of one claimed run, with one method per thing that can happen to it. */
class RunExecution implements Execution {
  readonly runId: string;
  readonly done: Promise<void>;
  private readonly token: number;
  private ended = false;
  private stopping = false;
  /** The actor could not be made: the run was ended failed, nothing else happens to it. */
  private unstartable = false;
  private deliveredId = 0;
  private lastRenewal = Date.now();
  private actor: AgentActor | undefined;
  private checkpoints: CheckpointHandle | undefined;
  private observation: RunObservation | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  private parking = false;
  /** The output is being written: the lease ends with it, so a renewal that finds no owner is no takeover. */
  private finishing = false;
  private resolveDone!: () => void;
  /** The finished run's last checkpoint, held back for the output's write (checkpointSink). */
  private lastCheckpoint: PersistedAgent | undefined;
  /** No checkpoint saved or restored yet: the next save may be one that only repeats the input. */
  private freshStart: boolean;
  /** Inbox reads one at a time, so no event is delivered twice. Resolves with how many were delivered. */
  private inboxChain: Promise<number> = Promise.resolve(0);

  constructor(private readonly options: ExecutionOptions) {
    this.runId = options.run.runId;
    this.token = options.run.token;
    this.freshStart = options.run.checkpoint === undefined;
    this.done = new Promise<void>((resolve) => (this.resolveDone = resolve));
  }

  /** Make (or restore) the actor, wire checkpoints, events and the heartbeat, and start it. */
  start(): void {
    const { store, run, worker, emit } = this.options;
    store.fence(this.runId, this.token, (error) => this.lose(error));
    let live: AgentActor;
    try {
      live = this.createAgent();
    } catch (error) {
      this.unstartable = true;
      void this.failUnstartable(`run ${this.runId} could not start: ${errorText(error)}`);
      return;
    }
    this.actor = live;
    // Before the execution's own subscription, so the events of the run's last step are flushed before the output (its end event after it).
    this.observation = this.options.observe?.({ runId: this.runId, agent: run.agent, token: this.token, actor: live, machine: this.options.machine, resumed: run.checkpoint !== undefined });
    this.checkpoints = checkpointAgent(live, this.checkpointSink(), {
      onError: (error) => this.lose(error.cause instanceof FencedError ? error.cause : error),
    });
    if (this.options.agentEvents) live.on("*", (event) => emit({ type: "agent.event", worker, runId: this.runId, event: event as AgentEmitted }));
    // No one can hear this actor: the chart builds no telemetry for it, as for runAgent without onEvent (machines/chart/audience.ts).
    else if (!this.observation) markUnheard(live);
    live.subscribe({
      next: (snapshot) => {
        if (!this.ended && snapshot.status === "active" && runStatusOf(snapshot) === "awaitingApproval") void this.parkWhenIdle();
      },
      complete: () => void this.finish(live.getSnapshot().output as AgentOutput),
      error: (error) => void this.failUnstartable(`run ${this.runId} failed inside the machine: ${errorText(error)}`),
    });
    this.heartbeat = setInterval(() => void this.beat(), Math.max(50, Math.floor(this.options.leaseMs / 3)));
    this.heartbeat.unref();
    emit({ type: "run.claimed", worker, runId: this.runId, agent: run.agent, token: this.token, resumed: run.checkpoint !== undefined });
    live.start();
    // The claim saw an empty inbox (and nothing was signalled for the run since): no read needed.
    if (!run.inboxEmpty) void this.checkInbox();
  }

  stopGracefully(): void {
    if (this.unstartable || this.ended || this.stopping) return;
    this.stopping = true;
    // Already at a resting point: waiting for a person (park) or between saves of a finished run.
    if (this.awaiting()) void this.parkWhenIdle();
  }

  abandon(reason: string): void {
    if (this.unstartable || this.ended) return;
    this.options.emit({ type: "run.abandoned", worker: this.options.worker, runId: this.runId, reason });
    this.end();
  }

  poke(): void {
    if (this.unstartable) return;
    void this.checkInbox();
  }

  private createAgent(): AgentActor {
    const { machine, run, blobProblem } = this.options;
    if (blobProblem !== undefined) throw new Error(blobProblem);
    const snapshot = run.checkpoint !== undefined ? restoreAgent(machine, run.checkpoint) : undefined;
    return createActor(machine, snapshot ? { snapshot } : { input: { ...run.input, runId: this.runId } });
  }

  /**
   * Saves go to the store (fenced by the token registered in `start`); a stopping worker releases the
   * run after the next one. The store also keeps the run's large images and files once
   * (machines/persistence/blobs.ts); its checkpoints refer to them.
   */
  private checkpointSink(): CheckpointStore & BlobStore {
    const { store, machine } = this.options;
    return {
      save: (id, record) => {
        // A finished run's last checkpoint is written with its output, in one commit (finish()).
        if (record.snapshot.status === "done") {
          this.lastCheckpoint = record;
          return;
        }
        // A fresh run's first checkpoint would only repeat its stored input (fresh-start.ts): not written.
        if (this.freshStart) {
          this.freshStart = false;
          if (startsOver(machine, record)) {
            if (this.stopping) void this.release();
            return;
          }
        }
        const result = store.save(id, record);
        // Released at the start of a model call (an aborted call is simply made again), never mid-tool.
        if (this.stopping && tagsAt(machine, record.snapshot.value).has(STATE_TAGS.modelCall)) {
          void Promise.resolve(result).then(() => this.release(), () => undefined);
        }
        return result;
      },
      load: (id) => store.load(id),
      list: () => store.list(),
      delete: (id) => store.delete(id),
      putBlob: (id, sha256, blob) => store.putBlob(id, sha256, blob),
      getBlob: (id, sha256) => store.getBlob(id, sha256),
    };
  }

  /** Renew the lease, then look at the inbox. */
  private async beat(): Promise<void> {
    if (this.ended) return;
    try {
      const ok = await this.options.store.renew(this.runId, this.token, this.options.leaseMs);
      if (!ok) return this.finishing ? undefined : this.lose(new FencedError(this.runId, this.token));
      this.lastRenewal = Date.now();
    } catch (error) {
      // Unreachable: keep going while the lease may still be ours, give the run up once it cannot be.
      if (Date.now() - this.lastRenewal >= this.options.leaseMs) this.lose(error);
      return;
    }
    await this.checkInbox();
  }

  /**
   * Stop everything local, then make the last write (if any); `done` settles after it.
   * `outputRecorded`: the run's own output is stored, so its observer may now tell the run's end.
   */
  private end(lastWrite?: () => Promise<void>, { outputRecorded = false } = {}): void {
    if (this.ended) return;
    this.ended = true;
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.checkpoints?.stop();
    this.observation?.close({ outputRecorded });
    this.options.store.unfence(this.runId);
    const stopped = this.actor;
    // Stopped outside the store call that found the other token (it may run inside the actor's own notification).
    queueMicrotask(() => {
      try {
        stopped?.stop();
      } catch {
        // Already stopped.
      }
      void (lastWrite ?? (async () => undefined))().finally(this.resolveDone);
    });
  }

  /** End with a last write of the run's state, telling the worker what came of it. */
  private endWith(write: () => Promise<boolean>, done: WorkerEvent): void {
    const { emit, worker } = this.options;
    this.end(async () => {
      try {
        if (await write()) emit(done);
        else emit({ type: "run.fenced", worker, runId: this.runId, token: this.token });
      } catch (error) {
        emit({ type: "run.abandoned", worker, runId: this.runId, reason: errorText(error) });
      }
    });
  }

  private lose(error: unknown): void {
    if (this.ended) return;
    // The database refuses what the run produced: another try (here or elsewhere) would refuse it again.
    if (refusedData(error)) return this.failUnstorable(error);
    const { emit, worker } = this.options;
    if (error instanceof FencedError) emit({ type: "run.fenced", worker, runId: this.runId, token: this.token });
    else emit({ type: "run.abandoned", worker, runId: this.runId, reason: errorText(error) });
    this.end();
  }

  /** A write of ours failed: fenced, or the database is unreachable. Either way the run stops here. */
  private async guarded(write: () => Promise<boolean>): Promise<boolean> {
    try {
      if (await write()) return true;
      this.lose(new FencedError(this.runId, this.token));
    } catch (error) {
      this.lose(error);
    }
    return false;
  }

  private flushCheckpoints(): Promise<boolean> {
    return this.guarded(async () => (await this.checkpoints?.flush(), true));
  }

  private awaiting(): boolean {
    const snapshot = this.actor?.getSnapshot();
    return snapshot !== undefined && snapshot.status === "active" && runStatusOf(snapshot) === "awaitingApproval";
  }

  private deliver(events: InboxEvent[]): void {
    for (const event of events) {
      if (this.ended || this.actor?.getSnapshot().status !== "active") return;
      this.deliveredId = Math.max(this.deliveredId, event.id);
      this.options.store.delivered(this.runId, this.deliveredId);
      this.actor.send(event.command);
    }
  }

  private fetchAndDeliver(): Promise<number> {
    this.inboxChain = this.inboxChain.then(
      async () => {
        if (this.ended) return 0;
        const events = await this.options.store.inbox(this.runId, this.deliveredId);
        this.deliver(events);
        return events.length;
      },
      () => 0,
    );
    return this.inboxChain;
  }

  private async checkInbox(): Promise<void> {
    try {
      await this.fetchAndDeliver();
    } catch {
      // The heartbeat decides when an unreachable database costs us the run.
    }
  }

  private async release(): Promise<void> {
    if (this.ended) return;
    if (!(await this.flushCheckpoints()) || this.ended) return;
    const { store, worker } = this.options;
    this.endWith(() => store.release(this.runId, this.token), { type: "run.released", worker, runId: this.runId });
  }

  /** Waiting for a person: deliver what is in the inbox; when nothing is, give the run up. */
  private async parkWhenIdle(): Promise<void> {
    if (this.parking) return;
    this.parking = true;
    try {
      if (!(await this.drainInboxWhileAwaiting())) return;
      const wakeAt = this.nearestApprovalDeadline();
      // A deadline about to pass: keep the run, the approval timer is due (parking it would only
      // have it claimed straight back).
      if (wakeAt !== undefined && !this.stopping && wakeAt - Date.now() < PARK_MARGIN_MS) {
        setTimeout(() => void this.parkWhenIdle(), Math.max(0, wakeAt - Date.now()) + 50).unref();
        return;
      }
      const { store, worker } = this.options;
      this.endWith(() => store.park(this.runId, this.token, wakeAt), {
        type: "run.parked",
        worker,
        runId: this.runId,
        ...(wakeAt !== undefined ? { wakeAt } : {}),
      });
    } finally {
      this.parking = false;
    }
  }

  /** Flush and deliver until the inbox is empty. False when the run stopped waiting or was lost meanwhile. */
  private async drainInboxWhileAwaiting(): Promise<boolean> {
    for (;;) {
      if (this.ended || !this.awaiting()) return false;
      if (!(await this.flushCheckpoints())) return false;
      if (this.ended || !this.awaiting()) return false;
      let delivered: number;
      try {
        delivered = await this.fetchAndDeliver();
      } catch (error) {
        this.lose(error);
        return false;
      }
      if (this.ended || !this.awaiting()) return false;
      if (delivered === 0) return true;
    }
  }

  private nearestApprovalDeadline(): number | undefined {
    const pending = pendingApprovals(this.actor!.getSnapshot() as unknown as { context: AgentContext });
    const deadlines = pending.map((p) => p.deadline).filter((d): d is number => d !== undefined);
    return deadlines.length > 0 ? Math.min(...deadlines) : undefined;
  }

  /** Record the output; the lease ends with it (no heartbeat after it, and none in flight counts). */
  private async writeOutput(output: AgentOutput): Promise<boolean> {
    this.finishing = true;
    if (this.heartbeat) clearInterval(this.heartbeat);
    const { store, emit, worker } = this.options;
    const next = this.options.next?.();
    let claimed: ClaimedRun[] | undefined;
    const recorded = await this.guarded(async () => {
      if (next === undefined || store.finishAndClaim === undefined) return store.finish(this.runId, this.token, output, this.lastCheckpoint);
      const result = await store.finishAndClaim(this.runId, this.token, output, this.lastCheckpoint, next.request);
      if (result.finished) claimed = result.claimed;
      return result.finished;
    });
    // The machine ends succeeded or failed ("awaitingApproval" is runAgent's, never a final state's).
    if (recorded) emit({ type: "run.finished", worker, runId: this.runId, status: output.status === "succeeded" ? "succeeded" : "failed" });
    await next?.settle(claimed);
    return recorded;
  }

  private async finish(output: AgentOutput): Promise<void> {
    try {
      await toolProvidersClosed(this.options.machine, this.runId);
    } catch {
      // Closing providers is best effort; the output stands.
    }
    if (!(await this.flushCheckpoints())) return;
    await this.observation?.flush().catch(() => undefined);
    if (this.ended) return;
    if (await this.writeOutput(output)) this.end(undefined, { outputRecorded: true });
  }

  /** A run whose input or checkpoint cannot be used ends failed, with the reason as its output. */
  private async failUnstartable(message: string): Promise<void> {
    // A write that failed has ended the run already (lose), so then this end does nothing.
    this.end(undefined, { outputRecorded: await this.writeOutput(failedOutput(this.runId, message, this.options.run.input)) });
  }

  /**
   * The database refused data of the run (its output, a checkpoint): it ends failed with that reason
   * (`termination.error.kind: "unstorable"`) instead of being given up and claimed again forever.
   * A refusal of this small output too gives the run up like any failed write.
   */
  private failUnstorable(error: unknown): void {
    const { store, run, worker } = this.options;
    const output = failedOutput(this.runId, `run ${this.runId} could not be stored, so it was ended: ${errorText(error)}`, run.input, "unstorable");
    this.endWith(() => store.finish(this.runId, this.token, output), { type: "run.finished", worker, runId: this.runId, status: "failed" });
  }
}

/** A store refused the run's data itself (RunQueueError `invalid_input`, possibly wrapped by the checkpointer), not the connection. */
function refusedData(error: unknown): boolean {
  for (let cause = error; cause instanceof Error; cause = cause.cause) {
    if (cause instanceof RunQueueError) return cause.problem === "invalid_input";
  }
  return false;
}
