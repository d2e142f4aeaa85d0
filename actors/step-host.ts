import { fromCallback, type AnyActorLogic, type EventObject } from "xstate";
import { LazyCancellation } from "./cancellation.js";
import { runCreator, type ReportingPromiseCreator } from "./reporting-promise.js";
import { JianmuError } from "../tools/jianmu-error.js";
import type { UnreportedSpend } from "./model-client.js";

/**
 * The run's step host: one actor for the whole run that runs a step (a model call, a batch of tool
 * calls) per request, instead of a child actor invoked and stopped by every state that waits on a
 * step. Spawning and stopping an actor is most of what the interpreter spends per round
 * (bench/README.md, "Designs measured"); a host started once takes it off every round.
 *
 * The protocol (`step` names the step by its logic's name: `llm`, `toolExecutor`):
 * - `step.request` `{ step, input, logic }`: run `logic`'s creator with `input`. `logic` is the step
 *   as the machine's implementations hold it (`fromPromise` / `fromReportingPromise`, or what
 *   `machine.provide({ actors })` put there), read by the state that sends the request.
 * - `step.abort` `{ step }`: the state that waited has left; the running step is stopped (its
 *   `signal` aborts) and whatever it answers later is dropped. A new request of the same step stops
 *   the one before it too.
 * - answers, through `sendBack`: the step's reports while it runs, then `<step>.done` `{ output }`
 *   or `<step>.error` `{ error }`.
 * - `steps.ready` when the host starts: a run restored in a state that waits on a step (its request
 *   went with the process that saved it) sends the request again, marked `again`: a host already
 *   running that step ignores it, so a ready that crossed a first request cannot run a step twice.
 */
export interface StepRequest {
  type: "step.request";
  step: string;
  input: unknown;
  logic: AnyActorLogic;
  again?: boolean;
}

/**
 * What the steps under way may have been billed so far (a model call's `CallMeter`, a guardrail
 * step's spending), by the actor running them (the step host, or an invoked step itself) and step.
 */
const meters = new WeakMap<object, Map<string, UnreportedSpend>>();

/**
 * `meter` is what `step`, run by `actor`, may have been billed so far without an answer; it stays
 * current as the step runs. The agent reads it if it ends while the step runs (`meteredUnder`): no
 * outcome of the step will reach it then. Returns the step's way to take it back when it ends (its
 * outcome says what it cost from there), which leaves a later step's meter alone.
 */
export function meterStep(actor: object, step: string, meter: UnreportedSpend): () => void {
  let steps = meters.get(actor);
  if (!steps) meters.set(actor, (steps = new Map()));
  steps.set(step, meter);
  return () => {
    if (steps.get(step) === meter) steps.delete(step);
  };
}

/** How deep `meteredUnder` looks: nested agents are never this deep. */
const MAX_DEPTH = 64;

/**
 * What the steps under way below `actor` may have been billed so far: its own step host's, and those
 * of its nested agents at any depth (a nested agent stopped with its caller never reports its own);
 * undefined when nothing is counted. `actor` is a live actor; anything else holds nothing.
 */
export function meteredUnder(actor: unknown): UnreportedSpend | undefined {
  const total = { tokens: 0, cost: 0 };
  const visit = (ref: unknown, depth: number): void => {
    if (depth > MAX_DEPTH || ref === null || typeof ref !== "object") return;
    for (const meter of meters.get(ref)?.values() ?? []) {
      total.tokens += meter.tokens;
      total.cost += meter.cost;
    }
    const snapshot = (ref as { getSnapshot?: () => { children?: Record<string, unknown> } | undefined }).getSnapshot?.();
    for (const child of Object.values(snapshot?.children ?? {})) visit(child, depth + 1);
  };
  visit(actor, 0);
  return total.tokens > 0 || total.cost > 0 ? total : undefined;
}

/** Step logic that is not promise-shaped cannot run in the host. */
export class StepLogicError extends JianmuError {
  static override readonly errorCode = "STEP_LOGIC_ERROR";
  override name = "StepLogicError";
}

/**
 * The creator behind promise logic (`fromPromise` and `fromReportingPromise` keep it as `config`),
 * held to giving a promise. Other logic (a callback, a machine, nothing) gets a step that fails,
 * naming the field: the step's error ends the run as any failed step does.
 */
function creatorOf(step: string, logic: AnyActorLogic | undefined): ReportingPromiseCreator<unknown, unknown, EventObject> {
  const known = logic ? creators.get(logic) : undefined;
  if (known) return known;
  const made = checkedCreator(step, logic);
  if (logic) creators.set(logic, made);
  return made;
}

/** Each logic's checked creator, made once (a step is asked for every round). */
const creators = new WeakMap<AnyActorLogic, ReportingPromiseCreator<unknown, unknown, EventObject>>();

function checkedCreator(step: string, logic: AnyActorLogic | undefined): ReportingPromiseCreator<unknown, unknown, EventObject> {
  const misfit = (what: string) =>
    new StepLogicError(`actors.${step}: the step must be promise logic, made with fromPromise(async ({ input, signal }) => ...); ${what}`);
  const creator = (logic as { config?: unknown } | undefined)?.config;
  if (typeof creator !== "function") {
    const problem = misfit(`got ${logic === undefined ? "nothing" : "another kind of actor logic"}`);
    return () => Promise.reject(problem);
  }
  return (args) => {
    const result: unknown = (creator as ReportingPromiseCreator<unknown, unknown, EventObject>)(args);
    if (typeof (result as PromiseLike<unknown> | null)?.then !== "function") throw misfit(`its creator returned ${result === null ? "null" : typeof result}, not a promise`);
    return result as PromiseLike<unknown>;
  };
}

/** The run's step host (see the protocol above). */
export function stepHost() {
  return fromCallback<EventObject>(({ self, system, emit, sendBack, receive }) => {
    const running = new Map<string, LazyCancellation>();
    // Forgotten first: whatever the step reports while it winds down goes to no one.
    const stop = (step: string) => {
      const cancellation = running.get(step);
      running.delete(step);
      cancellation?.abort();
    };
    receive((event) => {
      const { step } = event as { step?: unknown };
      if (typeof step !== "string") return;
      if (event.type === "step.abort") return stop(step);
      if (event.type !== "step.request") return;
      const { input, logic, again } = event as unknown as StepRequest;
      if (again && running.has(step)) return;
      stop(step);
      const cancellation = new LazyCancellation();
      running.set(step, cancellation);
      const current = () => running.get(step) === cancellation;
      const report = (event: EventObject) => {
        if (current()) sendBack(event);
      };
      const args: Parameters<typeof runCreator>[1] = { input, self, system, emit, report, cancellation };
      // Run now only if nothing runs it: the run was restored, and the step may have begun before.
      if (again) args.again = true;
      runCreator(creatorOf(step, logic), args).then(
        (output) => {
          if (!current()) return;
          running.delete(step);
          sendBack({ type: `${step}.done`, output });
        },
        (error: unknown) => {
          if (!current()) return;
          running.delete(step);
          sendBack({ type: `${step}.error`, error });
        },
      );
    });
    sendBack({ type: "steps.ready" });
    return () => {
      for (const step of [...running.keys()]) stop(step);
    };
  });
}
