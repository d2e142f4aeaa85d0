import { createActor, type Actor } from "xstate";
import { pendingApprovals } from "../machines/contract/approvals.js";
import { checkpointAgent, type CheckpointHandle } from "../machines/persistence/checkpoints/checkpoint-agent.js";
import type { CheckpointStore } from "../machines/persistence/checkpoints/store.js";
import type { AgentContext, AgentOutput } from "../machines/contract/context.js";
import type { AgentEmitted } from "../machines/contract/events.js";
import { restoreAgent, runStatusOf } from "../machines/persistence/persistence.js";
import { toolProvidersClosed, type ReactMachine } from "../machines/react-machine.js";
import { STATE_TAGS, tagsAt } from "../machines/contract/state-tags.js";
import { errorText, FencedError } from "./errors.js";
import { failedOutput, type RunStore } from "./run-store.js";
import type { ClaimedRun, InboxEvent } from "./schemas.js";
import type { WorkerEvent } from "./worker-events.js";

export interface ExecutionOptions {
  store: RunStore;
  machine: ReactMachine;
  run: ClaimedRun;
  worker: string;
  leaseMs: number;
  emit: (event: WorkerEvent) => void;
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
  const { store, machine, run, worker, leaseMs, emit } = options;
  const { runId, token } = run;
  let ended = false;
  let stopping = false;
  let deliveredId = 0;
  let lastRenewal = Date.now();
  let actor: AgentActor | undefined;
  let checkpoints: CheckpointHandle | undefined;
  let heartbeat: NodeJS.Timeout | undefined;
  let parking = false;
  let resolveDone!: () => void;
  const done = new Promise<void>((resolve) => (resolveDone = resolve));

  /** Stop everything local, then make the last write (if any); `done` settles after it. */
  const end = (lastWrite?: () => Promise<void>) => {
    if (ended) return;
    ended = true;
    if (heartbeat) clearInterval(heartbeat);
    checkpoints?.stop();
    store.unfence(runId);
    const stopped = actor;
    // Stopped outside the store call that found the other token (it may run inside the actor's own notification).
    queueMicrotask(() => {
      try {
        stopped?.stop();
      } catch {
        // Already stopped.
      }
      void (lastWrite ?? (async () => undefined))().finally(resolveDone);
    });
  };

  const lose = (error: unknown) => {
    if (ended) return;
    if (error instanceof FencedError) emit({ type: "run.fenced", worker, runId, token });
    else emit({ type: "run.abandoned", worker, runId, reason: errorText(error) });
    end();
  };

  /** A write of ours failed: fenced, or the database is unreachable. Either way the run stops here. */
  const guarded = async (write: () => Promise<boolean>): Promise<boolean> => {
    try {
      if (await write()) return true;
      lose(new FencedError(runId, token));
    } catch (error) {
      lose(error);
    }
    return false;
  };

  store.fence(runId, token, (error) => lose(error));

  const awaiting = () => {
    const snapshot = actor?.getSnapshot();
    return snapshot !== undefined && snapshot.status === "active" && runStatusOf(snapshot) === "awaitingApproval";
  };

  const deliver = (events: InboxEvent[]) => {
    for (const event of events) {
      if (ended || actor?.getSnapshot().status !== "active") return;
      deliveredId = Math.max(deliveredId, event.id);
      store.delivered(runId, deliveredId);
      actor.send(event.command);
    }
  };

  /** Inbox reads one at a time, so no event is delivered twice. Resolves with how many were delivered. */
  let inboxChain: Promise<number> = Promise.resolve(0);
  const fetchAndDeliver = (): Promise<number> => {
    inboxChain = inboxChain.then(
      async () => {
        if (ended) return 0;
        const events = await store.inbox(runId, deliveredId);
        deliver(events);
        return events.length;
      },
      () => 0,
    );
    return inboxChain;
  };

  const checkInbox = async () => {
    try {
      await fetchAndDeliver();
    } catch {
      // The heartbeat decides when an unreachable database costs us the run.
    }
  };

  const release = async () => {
    if (ended) return;
    const ok = await guarded(async () => {
      await checkpoints?.flush();
      return true;
    });
    if (!ok || ended) return;
    end(async () => {
      try {
        if (await store.release(runId, token)) emit({ type: "run.released", worker, runId });
        else emit({ type: "run.fenced", worker, runId, token });
      } catch (error) {
        emit({ type: "run.abandoned", worker, runId, reason: errorText(error) });
      }
    });
  };

  /** Waiting for a person: deliver what is in the inbox; when nothing is, give the run up. */
  const parkWhenIdle = async () => {
    if (parking) return;
    parking = true;
    try {
      for (;;) {
        if (ended || !awaiting()) return;
        if (!(await guarded(async () => (await checkpoints?.flush(), true)))) return;
        if (ended || !awaiting()) return;
        let delivered: number;
        try {
          delivered = await fetchAndDeliver();
        } catch (error) {
          return lose(error);
        }
        if (ended || !awaiting()) return;
        if (delivered === 0) break;
      }
      const pending = pendingApprovals(actor!.getSnapshot() as unknown as { context: AgentContext });
      const deadlines = pending.map((p) => p.deadline).filter((d): d is number => d !== undefined);
      const wakeAt = deadlines.length > 0 ? Math.min(...deadlines) : undefined;
      // A deadline about to pass: keep the run, the approval timer is due (parking it would only
      // have it claimed straight back).
      if (wakeAt !== undefined && !stopping && wakeAt - Date.now() < PARK_MARGIN_MS) {
        setTimeout(() => void parkWhenIdle(), Math.max(0, wakeAt - Date.now()) + 50).unref();
        return;
      }
      end(async () => {
        try {
          if (await store.park(runId, token, wakeAt)) emit({ type: "run.parked", worker, runId, ...(wakeAt !== undefined ? { wakeAt } : {}) });
          else emit({ type: "run.fenced", worker, runId, token });
        } catch (error) {
          emit({ type: "run.abandoned", worker, runId, reason: errorText(error) });
        }
      });
    } finally {
      parking = false;
    }
  };

  const finish = async (output: AgentOutput) => {
    try {
      await toolProvidersClosed(machine, runId);
    } catch {
      // Closing providers is best effort; the output stands.
    }
    if (!(await guarded(async () => (await checkpoints?.flush(), true)))) return;
    if (ended) return;
    const recorded = await guarded(() => store.finish(runId, token, output));
    if (!recorded) return;
    // The machine ends succeeded or failed ("awaitingApproval" is runAgent's, never a final state's).
    emit({ type: "run.finished", worker, runId, status: output.status === "succeeded" ? "succeeded" : "failed" });
    end();
  };

  /** A run whose input or checkpoint cannot be used ends failed, with the reason as its output. */
  const failUnstartable = async (message: string) => {
    const ok = await guarded(() => store.finish(runId, token, failedOutput(runId, message, run.input)));
    if (ok) emit({ type: "run.finished", worker, runId, status: "failed" });
    end();
  };

  try {
    const snapshot = run.checkpoint !== undefined ? restoreAgent(machine, run.checkpoint) : undefined;
    actor = createActor(machine, snapshot ? { snapshot } : { input: { ...run.input, runId } });
  } catch (error) {
    void failUnstartable(`run ${runId} could not start: ${errorText(error)}`);
    return { runId, done, stopGracefully: () => undefined, abandon: () => undefined, poke: () => undefined };
  }
  const live = actor;

  // Saves go to the store (fenced by the token registered above); a stopping worker releases the run after the next one.
  const checkpointSink: CheckpointStore = {
    save: (id, record) => {
      const result = store.save(id, record);
      // Released at the start of a model call (an aborted call is simply made again), never mid-tool.
      if (stopping && tagsAt(machine, record.snapshot.value).has(STATE_TAGS.modelCall)) void Promise.resolve(result).then(() => release(), () => undefined);
      return result;
    },
    load: (id) => store.load(id),
    list: () => store.list(),
    delete: (id) => store.delete(id),
  };
  checkpoints = checkpointAgent(live, checkpointSink, { onError: (error) => lose(error.cause instanceof FencedError ? error.cause : error) });
  live.on("*", (event) => emit({ type: "agent.event", worker, runId, event: event as AgentEmitted }));
  live.subscribe({
    next: (snapshot) => {
      if (!ended && snapshot.status === "active" && runStatusOf(snapshot) === "awaitingApproval") void parkWhenIdle();
    },
    complete: () => void finish(live.getSnapshot().output as AgentOutput),
    error: (error) => void failUnstartable(`run ${runId} failed inside the machine: ${errorText(error)}`),
  });

  heartbeat = setInterval(() => {
    void (async () => {
      if (ended) return;
      try {
        const ok = await store.renew(runId, token, leaseMs);
        if (!ok) return lose(new FencedError(runId, token));
        lastRenewal = Date.now();
      } catch (error) {
        // Unreachable: keep going while the lease may still be ours, give the run up once it cannot be.
        if (Date.now() - lastRenewal >= leaseMs) return lose(error);
        return;
      }
      await checkInbox();
    })();
  }, Math.max(50, Math.floor(leaseMs / 3)));
  heartbeat.unref();

  emit({ type: "run.claimed", worker, runId, agent: run.agent, token, resumed: run.checkpoint !== undefined });
  live.start();
  void checkInbox();

  return {
    runId,
    done,
    stopGracefully() {
      if (ended || stopping) return;
      stopping = true;
      // Already at a resting point: waiting for a person (park) or between saves of a finished run.
      if (awaiting()) void parkWhenIdle();
    },
    abandon(reason: string) {
      if (ended) return;
      emit({ type: "run.abandoned", worker, runId, reason });
      end();
    },
    poke() {
      void checkInbox();
    },
  };
}
