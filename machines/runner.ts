import { createActor, type InspectionEvent, type Observer, type OutputFrom, type Snapshot } from "xstate";
import { markUnheard } from "./chart/audience.js";
import { checkpointAgent } from "./persistence/checkpoints/checkpoint-agent.js";
import type { CheckpointStore } from "./persistence/checkpoints/store.js";
import { abandonThreadRun, startThreadRun } from "./persistence/log/threads.js";
import { pendingApprovals, type ApprovalAnswer, type PendingApproval } from "./contract/approvals.js";
import type { AgentContext, AgentInput, AgentOutput } from "./contract/context.js";
import type { AgentEmitted } from "./contract/events.js";
import { toolProvidersClosed, type ReactMachine } from "./react-machine.js";

export interface RunOptions {
  /** Aborting it sends `agent.cancel`: the run ends `Failed` with reason "cancelled". */
  signal?: AbortSignal;
  /** Every emitted telemetry event, in order. */
  onEvent?: (event: AgentEmitted) => void;
  /** Resume from a persisted snapshot instead of starting fresh (input is then ignored). */
  snapshot?: Snapshot<unknown>;
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
   * for each call already waiting. A callback that throws rejects the call with its message.
   */
  onApproval?: (request: PendingApproval) => ApprovalAnswer | Promise<ApprovalAnswer>;
  /**
   * An OpenTelemetry `Tracer` (`trace.getTracer("my-app")` from `@opentelemetry/api`): the run
   * produces GenAI spans (`invoke_agent`, `chat`, `execute_tool`, `awaiting_approval`), see
   * `traceAgent` in `jianmu/otel`, which is loaded only when this is given.
   */
  tracer?: TracerLike;
  /** With `tracer`: also record message content (tool arguments and results, model text) on the spans. */
  traceContent?: boolean;
}

/**
 * What `RunOptions.tracer` accepts: an OpenTelemetry `Tracer`, typed by shape so that `jianmu`'s
 * types do not need `@opentelemetry/api` installed.
 */
export interface TracerLike {
  startSpan(name: string, options?: object, context?: object): object;
}

/** How a run attaches an observer (tracing) to its actor before it starts. */
type Attach = (actor: ReturnType<typeof createActor<ReactMachine>>) => void;

/**
 * Run an agent to a final state and resolve with its output. Model and tool failures are outputs
 * (`status: "failed"` with a termination); it rejects only for programmer errors such as invalid input.
 * Resolves after the run's tool providers have closed.
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
    let actor: ReturnType<typeof createActor<ReactMachine>>;
    try {
      actor = createActor(machine as ReactMachine, {
        input,
        ...(options.snapshot ? { snapshot: options.snapshot } : {}),
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
    if (options.onEvent) {
      const onEvent = options.onEvent;
      actor.on("*", (event) => onEvent(event as AgentEmitted));
    }
    const onApproval = options.onApproval;
    const send = (event: Parameters<typeof actor.send>[0]) => {
      if (actor.getSnapshot().status === "active") actor.send(event);
    };
    const ask = (request: PendingApproval) => {
      // A nested agent's call goes back down its path.
      const path = request.agentPath ? { agentPath: request.agentPath } : {};
      Promise.resolve()
        .then(() => onApproval!(request))
        .then(
          (answer) =>
            answer.approve
              ? send({ type: "guard.approve", callId: request.callId, ...path, ...(answer.args !== undefined ? { args: answer.args } : {}) })
              : send({ type: "guard.reject", callId: request.callId, ...path, ...(answer.reason !== undefined ? { reason: answer.reason } : {}) }),
          (error: unknown) =>
            send({ type: "guard.reject", callId: request.callId, ...path, reason: `the approver failed: ${error instanceof Error ? error.message : String(error)}` }),
        );
    };
    if (onApproval) actor.on("guard.approval.requested", (event) => ask(event));
    actor.subscribe({
      complete: () => {
        cleanup();
        const output = actor.getSnapshot().output as OutputFrom<M> & AgentOutput;
        toolProvidersClosed(machine, output.runId)
          .then(() => checkpoints?.flush())
          .then(() => resolve(output), reject);
      },
      error: (error) => {
        cleanup();
        reject(error);
      },
    });
    actor.start();
    // A restored run may already be waiting: its requests were emitted in the process that saved it.
    if (onApproval && options.snapshot) for (const request of pendingApprovals(actor.getSnapshot() as { context: AgentContext })) ask(request);
    // A run restored from a finished snapshot completes inside start(): nothing is left to cancel.
    if (finished || !options.signal) return;
    if (options.signal.aborted) onAbort();
    else release = whenAborted(options.signal, onAbort);
  });
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
