import { createActor, type InspectionEvent, type Observer, type OutputFrom, type Snapshot } from "xstate";
import { checkpointAgent } from "./checkpoints/checkpoint-agent.js";
import type { CheckpointStore } from "./checkpoints/store.js";
import { pendingApprovals, type ApprovalAnswer, type PendingApproval } from "./approvals.js";
import type { AgentContext, AgentInput, AgentOutput } from "./context.js";
import type { AgentEmitted } from "./events.js";
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
   */
  checkpoints?: CheckpointStore;
  /**
   * Decide calls that need approval. Called for each request, and, for a run resumed from a snapshot,
   * for each call already waiting. A callback that throws rejects the call with its message.
   */
  onApproval?: (request: PendingApproval) => ApprovalAnswer | Promise<ApprovalAnswer>;
}

/**
 * Run an agent to a final state and resolve with its output. Model and tool failures are outputs
 * (`status: "failed"` with a termination); it rejects only for programmer errors such as invalid input.
 * Resolves after the run's tool providers have closed.
 */
export function runAgent<M extends ReactMachine>(machine: M, input: AgentInput = {}, options: RunOptions = {}): Promise<OutputFrom<M>> {
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
      Promise.resolve()
        .then(() => onApproval!(request))
        .then(
          (answer) =>
            answer.approve
              ? send({ type: "guard.approve", callId: request.callId, ...(answer.args !== undefined ? { args: answer.args } : {}) })
              : send({ type: "guard.reject", callId: request.callId, ...(answer.reason !== undefined ? { reason: answer.reason } : {}) }),
          (error: unknown) =>
            send({ type: "guard.reject", callId: request.callId, reason: `the approver failed: ${error instanceof Error ? error.message : String(error)}` }),
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
