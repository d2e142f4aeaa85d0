import { createActor, type InspectionEvent, type Observer, type OutputFrom, type Snapshot } from "xstate";
import { markUnheard } from "./chart/audience.js";
import { checkpointAgent } from "./persistence/checkpoints/checkpoint-agent.js";
import type { CheckpointStore } from "./persistence/checkpoints/store.js";
import { abandonThreadRun, startThreadRun } from "./persistence/log/threads.js";
import { createApprover, type Approver } from "./approver.js";
import { runOutputFields } from "./chart/run-output.js";
import { pendingApprovals, type PendingApproval } from "./contract/approvals.js";
import type { AgentContext, AgentInput, AgentOutput } from "./contract/context.js";
import type { AgentEmitted } from "./contract/events.js";
import { restoreAgent, runStatusOf, SNAPSHOT_FORMAT, type PersistedAgent } from "./persistence/persistence.js";
import { stateAccessOf, toolProvidersClosed, type ReactMachine } from "./react-machine.js";

export interface RunOptions {
  /** Aborting it sends `agent.cancel`: the run ends `Failed` with reason "cancelled". */
  signal?: AbortSignal;
  /** Every emitted telemetry event, in order. */
  onEvent?: (event: AgentEmitted) => void;
  /**
   * Resume a saved run instead of starting fresh (input is then ignored): `restoreAgent(machine, saved)`,
   * or the saved run itself (`persistAgent`'s envelope, what `store.load(runId)` gives), which is
   * restored with `restoreAgent` first and refused with its `SnapshotError` when it does not fit.
   */
  snapshot?: Snapshot<unknown> | PersistedAgent;
  /** Passed to `createActor` (e.g. the Stately inspector's `inspect`). */
  inspect?: Observer<InspectionEvent> | ((event: InspectionEvent) => void);
  /**
   * Save the run at every stable state (see `checkpointAgent`). Give the machine the same store as
   * its `journal` so a restored run never runs a tool twice. A failed save makes the run reject.
   * With `input.threadId` it is also where the thread's conversation is read from (it must be one
   * of jianmu's stores: they keep threads).
   */
  checkpoints?: CheckpointStore;
  /**
   * Decide calls that need approval. Called for each request, and, for a run resumed from a snapshot,
   * for each call already waiting. A callback that throws rejects the call with its message. An answer
   * the agent refuses (edited arguments that do not fit the tool, ...) is asked again with the
   * refusal's reason in `request.refusal`; after 3 refusals the call is rejected with that reason.
   *
   * Without it, a run that comes to wait for a person is not kept waiting: `runAgent` saves it (with
   * `checkpoints`), stops it and resolves with `status: "awaitingApproval"`, its `runId` and its
   * `pendingApprovals`; continue it with `runAgent(machine, undefined, { snapshot, onApproval })`.
   * A call whose guard set a deadline keeps the run going until its approval timer fires.
   */
  onApproval?: Approver;
  /**
   * An OpenTelemetry `Tracer` (`trace.getTracer("my-app")` from `@opentelemetry/api`): the run
   * produces GenAI spans (`invoke_agent`, `chat`, `execute_tool`, `awaiting_approval`), see
   * `traceAgent` in `jianmu/otel`, which is loaded only when this is given.
   */
  tracer?: TracerLike;
  /** With `tracer`: also record message content (tool arguments and results, model text) on the spans. */
  traceContent?: boolean;
}

/** What watches a run beside the caller (a recording, an eval's trajectory): every inspection event and every emitted one. */
export interface RunWatcher {
  inspect(event: InspectionEvent): void;
  onEvent(event: AgentEmitted): void;
}

/** `options` with `watcher` hearing every event first, and the caller's own `inspect` and `onEvent` still hearing them after. */
export function watchedRun(options: RunOptions, watcher: RunWatcher): RunOptions {
  const { inspect, onEvent } = options;
  const forward = inspect === undefined ? undefined : typeof inspect === "function" ? inspect : (event: InspectionEvent) => inspect.next?.(event);
  return {
    ...options,
    inspect: (event) => {
      watcher.inspect(event);
      forward?.(event);
    },
    onEvent: (event) => {
      watcher.onEvent(event);
      onEvent?.(event);
    },
  };
}

/**
 * What `RunOptions.tracer` accepts: an OpenTelemetry `Tracer`, typed by shape so that `jianmu`'s
 * types do not need `@opentelemetry/api` installed.
 */
export interface TracerLike {
  startSpan(name: string, options?: object, context?: object): object;
}

type AgentActor = ReturnType<typeof createActor<ReactMachine>>;

/** How a run attaches an observer (tracing) to its actor before it starts. */
type Attach = (actor: AgentActor) => void;

/**
 * Run an agent to a final state and resolve with its output. Model and tool failures are outputs
 * (`status: "failed"` with a termination); it rejects only for programmer errors such as invalid input.
 * Given no `onApproval`, a run left waiting for a person resolves with `status: "awaitingApproval"`
 * (see `RunOptions.onApproval`). Resolves after the run's tool providers have closed.
 */
export function runAgent<M extends ReactMachine>(machine: M, input: AgentInput = {}, options: RunOptions = {}): Promise<OutputFrom<M>> {
  // A thread's next run starts from the thread's conversation, kept in the store (machines/persistence/log/threads.ts).
  if (input.threadId !== undefined && options.snapshot === undefined) {
    return startThreadRun(options.checkpoints, input, machine.id).then((threaded) =>
      tracedRun(machine, threaded, options).catch(async (error: unknown) => {
        await abandonThreadRun(options.checkpoints, threaded).catch(() => undefined);
        throw error;
      }),
    );
  }
  return tracedRun(machine, input, options);
}

function tracedRun<M extends ReactMachine>(machine: M, input: AgentInput, options: RunOptions): Promise<OutputFrom<M>> {
  if (options.tracer === undefined) return startRun(machine, input, options);
  const tracer = options.tracer;
  // Loaded on demand so that `import "jianmu"` never loads OpenTelemetry.
  return import("../otel/trace-agent.js").then(
    ({ traceAgent }) => startRun(machine, input, options, (actor) => traceAgent(actor, { tracer: tracer as unknown as Parameters<typeof traceAgent>[1]["tracer"], captureContent: options.traceContent === true })),
    (error: unknown) => {
      throw new Error(
        `runAgent: options.tracer needs the optional package @opentelemetry/api (npm install @opentelemetry/api): ${error instanceof Error ? error.message : String(error)}`,
      );
    },
  );
}

function startRun<M extends ReactMachine>(machine: M, input: AgentInput, options: RunOptions, attach?: Attach): Promise<OutputFrom<M>> {
  return new Promise<OutputFrom<M>>((resolve, reject) => {
    let actor: AgentActor;
    try {
      const snapshot = isSavedRun(options.snapshot) ? restoreAgent(machine, options.snapshot) : options.snapshot;
      actor = createActor(machine as ReactMachine, {
        input,
        ...(snapshot ? { snapshot } : {}),
        ...(options.inspect ? { inspect: options.inspect } : {}),
      });
    } catch (error) {
      reject(error);
      return;
    }
    attach?.(actor);
    // The actor stays ours: with no listener and no inspector, no one can ever hear its telemetry.
    if (!attach && !options.onEvent && !options.onApproval && !options.inspect) markUnheard(actor);
    const checkpoints = options.checkpoints ? checkpointAgent(actor, options.checkpoints) : undefined;
    const onAbort = () => actor.send({ type: "agent.cancel", reason: "the caller's signal was aborted" });
    let finished = false;
    let release = (): void => undefined;
    const cleanup = () => {
      finished = true;
      release();
    };
    /** Settle once the providers have closed and every checkpoint is stored. */
    const settle = (output: AgentOutput, runId: string) =>
      toolProvidersClosed(machine, runId)
        .then(() => checkpoints?.flush())
        .then(() => resolve(output as OutputFrom<M>), reject);
    if (options.onEvent) {
      const onEvent = options.onEvent;
      actor.on("*", (event) => onEvent(event as AgentEmitted));
    }
    const waitingNow = () => pendingApprovals(actor.getSnapshot() as { context: AgentContext });
    const approver = options.onApproval
      ? createApprover(actor, options.onApproval, (request) => waitingNow().some((p) => p.callId === request.callId && sameJson(p.agentPath, request.agentPath)))
      : undefined;
    if (approver) actor.on("guard.approval.requested", (event) => approver.ask(event));
    actor.subscribe({
      next: (snapshot) => {
        // Nobody to ask: once the run can only wait for a person, hand it back instead of hanging.
        if (!approver && !finished && parkedCalls(machine, snapshot) !== undefined) void park();
      },
      complete: () => {
        if (finished) return;
        cleanup();
        const output = actor.getSnapshot().output as AgentOutput;
        void settle(output, output.runId);
      },
      error: (error) => {
        if (finished) return;
        cleanup();
        reject(error);
      },
    });
    let parking = false;
    /** The run waits on calls only a person can decide: save it, stop it, resolve with what waits. */
    const park = async () => {
      if (parking) return;
      parking = true;
      // After the macrostep that got here: the checkpoint of AwaitingApproval is queued by then.
      await Promise.resolve();
      const snapshot = actor.getSnapshot();
      const pending = parkedCalls(machine, snapshot);
      if (finished || pending === undefined) {
        parking = false;
        return;
      }
      cleanup();
      const context = snapshot.context as AgentContext;
      const output: AgentOutput = { status: "awaitingApproval", ...runOutputFields(context, stateAccessOf(machine)!), pendingApprovals: pending };
      try {
        await checkpoints?.flush();
      } catch (error) {
        actor.stop();
        reject(error);
        return;
      }
      checkpoints?.stop();
      actor.stop();
      await settle(output, context.loop.runId);
    };
    actor.start();
    // A restored run may already be waiting: its requests were emitted in the process that saved it.
    if (approver && options.snapshot) for (const request of waitingNow()) approver.ask(request);
    // A run restored from a finished snapshot completes inside start(): nothing is left to cancel.
    if (finished || !options.signal) return;
    if (options.signal.aborted) onAbort();
    else release = whenAborted(options.signal, onAbort);
  });
}

/** A saved run's envelope (`persistAgent`, `store.load`) rather than a snapshot `restoreAgent` gave. */
const isSavedRun = (value: RunOptions["snapshot"]): value is PersistedAgent => (value as { format?: unknown } | undefined)?.format === SNAPSHOT_FORMAT;

const sameJson = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

/**
 * The calls a run waits on when a person is all it waits for: it sits in a state tagged `approval`
 * and no waiting call has a deadline (the approval timer would move such a run on by itself).
 * Undefined while the run has anything else to do.
 */
function parkedCalls(machine: ReactMachine, snapshot: ReturnType<AgentActor["getSnapshot"]>): PendingApproval[] | undefined {
  if (snapshot.status !== "active" || runStatusOf(snapshot, machine) !== "awaitingApproval") return undefined;
  const pending = pendingApprovals(snapshot as unknown as { context: AgentContext });
  return pending.length > 0 && pending.every((call) => call.deadline === undefined) ? pending : undefined;
}

/**
 * The runs waiting on each caller signal. One long-lived signal (an application's shutdown signal)
 * may serve thousands of concurrent runs; they share a single listener on it, so it never holds
 * more than one from jianmu (Node warns of a leak past 10) and none once they have ended.
 */
const waitingOn = new WeakMap<AbortSignal, { cancels: Set<() => void>; fire: () => void }>();

function whenAborted(signal: AbortSignal, cancel: () => void): () => void {
  let entry = waitingOn.get(signal);
  if (!entry) {
    const cancels = new Set<() => void>();
    const fire = () => {
      waitingOn.delete(signal);
      for (const each of [...cancels]) each();
    };
    entry = { cancels, fire };
    waitingOn.set(signal, entry);
    signal.addEventListener("abort", fire, { once: true });
  }
  const mine = entry;
  mine.cancels.add(cancel);
  return () => {
    mine.cancels.delete(cancel);
    if (mine.cancels.size === 0 && waitingOn.get(signal) === mine) {
      waitingOn.delete(signal);
      signal.removeEventListener("abort", mine.fire);
    }
  };
}
