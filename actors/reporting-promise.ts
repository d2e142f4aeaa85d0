import { fromCallback, type AnyActorRef, type EventObject, type PromiseActorLogic } from "xstate";
import { LazyCancellation, type Cancellation } from "./cancellation.js";

/** What a reporting step gets: `fromPromise`'s arguments, plus `report` to tell the agent how it goes. */
export interface ReportingPromiseArgs<TInput, TReport extends EventObject> {
  input: TInput;
  signal: AbortSignal;
  self: AnyActorRef;
  system: AnyActorRef["system"];
  emit: (event: EventObject) => void;
  /**
   * Send an event to the agent that invoked this step (XState's public `sendBack`). Absent when the
   * creator runs under plain `fromPromise` (e.g. a test wraps it): then report nothing while it runs.
   */
  report?: (event: TReport) => void;
  /**
   * The step's stop, also readable without making `signal` (made on first read: see
   * cancellation.ts). Absent under plain `fromPromise`: then read `signal`.
   */
  cancellation?: Cancellation;
  /**
   * The step runs again for a run restored while it waited on it (asked again by the step host, or
   * restarted from its saved snapshot when invoked): the process that saved the run may have begun it
   * already (a model call made, and billed). Absent otherwise.
   */
  again?: true;
}

export type ReportingPromiseCreator<TOutput, TInput, TReport extends EventObject> = (args: ReportingPromiseArgs<TInput, TReport>) => PromiseLike<TOutput>;

/**
 * The creator's `signal`: an own, enumerable property (as `fromPromise` gives it, so spreading the
 * arguments keeps it) read through one shared getter. An object literal with its own `get signal()`
 * would cost V8 about 0.7 µs to build on every step; defining a shared accessor costs a seventh of that.
 */
const SIGNAL_ON_READ: PropertyDescriptor = {
  get(this: { cancellation: Cancellation }): AbortSignal {
    return this.cancellation.signal;
  },
  enumerable: true,
  configurable: true,
};

/**
 * Run a reporting step's creator with `args` (its `signal` made from `cancellation` on first read),
 * as one promise: a creator that throws gives a rejected one. Promise.resolve adopts the creator's
 * own promise as is: wrapping it in a new Promise would cost two more turns of the microtask queue
 * on every step, for the same outcome.
 */
export function runCreator<TOutput, TInput, TReport extends EventObject>(
  creator: ReportingPromiseCreator<TOutput, TInput, TReport>,
  args: Omit<ReportingPromiseArgs<TInput, TReport>, "signal"> & { cancellation: Cancellation },
): Promise<TOutput> {
  // Complete once `signal` is defined on it.
  const full = Object.defineProperty(args, "signal", SIGNAL_ON_READ) as ReportingPromiseArgs<TInput, TReport>;
  try {
    return Promise.resolve(creator(full));
  } catch (error) {
    return Promise.reject(error);
  }
}

/** Snapshots XState restored (a run restored while its invoked step ran), and the steps started from them. */
const restoredSnapshots = new WeakSet<object>();
const restartedSteps = new WeakSet<object>();

/** The step's own events: its promise settled. Only the step sends them, to itself. */
const SETTLED = "jianmu.step.settled";
type Settled<TOutput> = { type: typeof SETTLED; ok: true; output: TOutput } | { type: typeof SETTLED; ok: false; error: unknown };

/**
 * Like `fromPromise` (same snapshot, same persisted form, same `xstate.done.actor.*` /
 * `xstate.error.actor.*` outcome, same cancellation: stopping it aborts `signal`), but the creator
 * can also `report` progress to the invoking agent while it runs. Built on `fromCallback`, whose
 * `sendBack` is XState's public way to reach the parent, instead of reading the parent from
 * XState's internals. `logic.config` is the creator, as for `fromPromise`.
 */
export function fromReportingPromise<TOutput, TInput, TReport extends EventObject = EventObject>(
  creator: ReportingPromiseCreator<TOutput, TInput, TReport>,
): PromiseActorLogic<TOutput, TInput> {
  const callback = fromCallback<EventObject, TInput>(({ input, self, system, emit, sendBack }) => {
    // One controller per request, released with it: stopping the step before it settles aborts it.
    // Made only if the creator reads `signal` (or on a stop): see cancellation.ts.
    const cancellation = new LazyCancellation();
    let settled = false;
    const settle = (event: Settled<TOutput>) => {
      settled = true;
      if (self.getSnapshot().status === "active") self.send(event);
    };
    const args: Parameters<typeof runCreator<TOutput, TInput, TReport>>[1] = { input, self, system, emit, report: sendBack, cancellation };
    if (restartedSteps.has(self)) args.again = true;
    runCreator(creator, args).then(
      (output) => settle({ type: SETTLED, ok: true, output }),
      (error: unknown) => settle({ type: SETTLED, ok: false, error }),
    );
    return () => {
      if (!settled) cancellation.abort();
    };
  });
  const logic = {
    ...callback,
    config: creator,
    // XState restores a step only for a run restored while it waited on it (an invoked step's snapshot
    // is part of the run's): the step starts again, and the creator hears so (`again`).
    restoreSnapshot: (snapshot: Parameters<typeof callback.transition>[0]) => {
      const restored = { ...snapshot };
      restoredSnapshots.add(restored);
      return restored;
    },
    start: (snapshot: Parameters<typeof callback.transition>[0], scope: Parameters<typeof callback.transition>[2]) => {
      if (restoredSnapshots.has(snapshot)) restartedSteps.add(scope.self);
      callback.start!(snapshot, scope);
    },
    transition: (snapshot: Parameters<typeof callback.transition>[0], event: EventObject, scope: Parameters<typeof callback.transition>[2]) => {
      if (snapshot.status !== "active" || event.type !== SETTLED) return callback.transition(snapshot, event, scope);
      const outcome = event as Settled<TOutput>;
      return outcome.ok
        ? { ...snapshot, status: "done" as const, output: outcome.output, input: undefined }
        : { ...snapshot, status: "error" as const, error: outcome.error, input: undefined };
    },
  };
  // The snapshots are fromPromise's (status, output, error, input): the chart types its outcomes as for fromPromise.
  return logic as unknown as PromiseActorLogic<TOutput, TInput>;
}
