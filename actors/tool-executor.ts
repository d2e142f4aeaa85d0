import type { Tool, ToolContext } from "../tools/tool.js";
import type { ToolSet } from "../tools/toolset.js";
import type { CallDecision } from "./guard.js";
import type { ToolCall } from "./messages.js";
import { RunStoppedError, type JournalKey, type ToolJournal } from "./tool-journal.js";
import { mayRun, planCall, type CallPlan, type JournalView } from "./call-plan.js";
import { failedOutcome, failureOf, succeededOutcome, truncateOutput, type ToolErrorKind, type ToolOutcome } from "./tool-outcome.js";
import { ProgressBatcher, type Progress } from "./progress.js";
import type { ToolProgress } from "./tool-events.js";
import { fromReportingPromise } from "./reporting-promise.js";
import { cancellationOf, type Cancellation } from "./cancellation.js";
import type { ToolOwners } from "./tool-providers.js";
import { renderResult, renderValue, thrownMessage } from "./tool-values.js";
import { checkedToolContent, isToolContent } from "./tool-content.js";
import { JianmuError } from "../tools/jianmu-error.js";
import { withRetries } from "./tool-retry.js";

/** Replaces how one validated call is run (e.g. in a sandbox). The default calls `tool.execute`. */
export type ToolRunner = (tool: Tool, args: Record<string, unknown>, ctx: ToolContext) => unknown;

export { TOOL_ERROR_KINDS, truncateOutput, type ToolErrorKind, type ToolOutcome } from "./tool-outcome.js";

/** Live progress, sent to the agent while the batch runs (in batches, see `ProgressBatcher`); its schemas are in tool-events.ts. */
export type { ToolProgress } from "./tool-events.js";

export interface ExecutorInput {
  runId: string;
  /** Scopes call ids in the journal (they are only unique within one model reply). */
  iteration?: number;
  calls: ToolCall[];
  decisions: CallDecision[];
  mode: "serial" | "parallel" | "auto";
  state: Record<string, unknown>;
  maxOutputChars: number;
  /** The tools offered to the model this round (`prepareRound`); a call of any other is an unknown tool. */
  offered?: readonly string[];
}

export interface ExecutorOutput {
  outcomes: ToolOutcome[];
  /** Progress of the batch not yet sent to the agent: the agent reports it before the outcomes. */
  progress?: Progress<ToolProgress>[];
}

export interface ExecutorDeps {
  /**
   * The agent's tools (providers may still be starting after a restore: hence a promise). `owner`
   * names the agent actor's tools (`toolsOwnerOf`): two live actors of one run each have their own tools.
   */
  toolset(runId: string, owner?: string): Promise<ToolSet>;
  /** The same tools when they are ready (undefined while providers start): saves awaiting `toolset` every round. */
  toolsetNow?(runId: string, owner?: string): ToolSet | undefined;
  /** Whose tools each input was made for (`toolsOwnerOf`, marked by the agent's invoke input mapper). */
  owners?: ToolOwners;
  runner?: ToolRunner;
  now?: () => number;
  /** Consulted before each call and written before each result is returned: at most once across restarts. */
  journal?: ToolJournal;
}

const defaultRunner: ToolRunner = (tool, args, ctx) => tool.execute(args, ctx);

/**
 * Turn whatever a tool returned into the text the model reads. Values JSON cannot encode (cycles,
 * BigInt, Map/Set, a throwing getter or `toJSON`) are described rather than reported as
 * "[object Object]" (see `tool-values.ts`); it never throws.
 */
export function renderToolOutput(value: unknown): string {
  return renderValue(value);
}

/** A read-only view: reading works, any write throws (tools must not change the run state). */
export function readOnlyView<T extends object>(value: T): T {
  const cache = new WeakMap<object, object>();
  const wrap = (target: object): object => {
    const cached = cache.get(target);
    if (cached) return cached;
    const proxy = new Proxy(target, {
      get(obj, key, receiver) {
        const item: unknown = Reflect.get(obj, key, receiver);
        return item !== null && typeof item === "object" ? wrap(item) : item;
      },
      set() {
        throw new TypeError("ctx.state is read-only: tools report results by returning them");
      },
      deleteProperty() {
        throw new TypeError("ctx.state is read-only: tools report results by returning them");
      },
      defineProperty() {
        throw new TypeError("ctx.state is read-only: tools report results by returning them");
      },
    });
    cache.set(target, proxy);
    return proxy;
  };
  return wrap(value) as T;
}

class ToolTimeoutError extends JianmuError {
  static override readonly errorCode = "TOOL_TIMEOUT_ERROR";
  override name = "ToolTimeoutError";
}

/**
 * The batch's single abort listener, passing an abort on to every call still running. One per
 * batch, not one per call: a batch of more than 10 parallel calls would otherwise make Node warn
 * of a listener leak (MaxListenersExceededWarning) on the batch signal. It listens through the
 * step's cancellation (cancellation.ts), so a batch whose tools never read `ctx.signal`
 * makes no AbortSignal at all.
 */
class BatchAborts {
  private readonly running = new Set<AbortController>();
  /** Rejects with the abort reason when the batch is aborted: the batch races against it. */
  readonly stopped: Promise<never>;
  private rejectStopped: (reason: unknown) => void = () => undefined;
  private readonly onAbort = () => {
    const reason = this.cancellation.reason;
    for (const controller of this.running) controller.abort(reason);
    this.rejectStopped(reason ?? new Error("aborted"));
  };
  readonly release: () => void;

  constructor(readonly cancellation: Cancellation) {
    this.stopped = new Promise<never>((_, reject) => (this.rejectStopped = reject));
    this.stopped.catch(() => undefined);
    this.release = cancellation.onAbort(this.onAbort);
  }

  get aborted(): boolean {
    return this.cancellation.aborted;
  }

  /** A controller for one call, aborted with the batch; `untrack` it when the call has ended. */
  track(): AbortController {
    const controller = new AbortController();
    if (this.cancellation.aborted) controller.abort(this.cancellation.reason);
    this.running.add(controller);
    return controller;
  }

  untrack(controller: AbortController): void {
    this.running.delete(controller);
  }
}

/**
 * A call's `ctx`. `signal` and `state` are made on first read: the call's own AbortController (so
 * a tool's listeners never pile up on the batch signal) only when the tool reads `ctx.signal` or
 * has a timeout, the read-only view only when it looks at the state; most tools do neither, and
 * each costs microseconds. Both are own, enumerable properties, as in a plain object (a runner may
 * spread `ctx`), read through getters shared by every call: an object literal with its own getters
 * costs V8 close to 1 µs to build, per call.
 */
class CallContext implements ToolContext {
  // Two defineProperty calls, not one defineProperties: measured faster in V8 (about 0.2 µs against 0.35).
  static readonly #signal: PropertyDescriptor = {
    get(this: CallContext): AbortSignal {
      return this.own().signal;
    },
    enumerable: true,
    configurable: true,
  };
  static readonly #state: PropertyDescriptor = {
    get(this: CallContext): ToolContext["state"] {
      return (this.#view ??= readOnlyView(this.#runState));
    },
    enumerable: true,
    configurable: true,
  };
  declare readonly signal: AbortSignal;
  declare readonly state: ToolContext["state"];
  #controller: AbortController | undefined;
  #view: ToolContext["state"] | undefined;
  readonly #runState: Record<string, unknown>;
  readonly #batch: BatchAborts;

  constructor(
    readonly callId: string,
    runState: Record<string, unknown>,
    batch: BatchAborts,
  ) {
    this.#runState = runState;
    this.#batch = batch;
    Object.defineProperty(this, "signal", CallContext.#signal);
    Object.defineProperty(this, "state", CallContext.#state);
  }

  /** The call's own controller, aborted with the batch; made on first need. */
  own(): AbortController {
    return (this.#controller ??= this.#batch.track());
  }

  /** The call has ended: its controller (if it was made) no longer follows the batch. */
  release(): void {
    if (this.#controller) this.#batch.untrack(this.#controller);
  }
}

/**
 * Run one call, stopped by its timeout if it has one (a tool that ignores its signal is left
 * behind, not waited for; the batch as a whole races the batch abort in the same way).
 * `deferred`: start the tool on the next microtask, so that every call of a parallel batch is
 * reported started before any tool body runs; a call run on its own starts at once.
 */
async function runWithLimits(
  tool: Tool,
  args: Record<string, unknown>,
  call: ToolCall,
  state: Record<string, unknown>,
  batch: BatchAborts,
  runner: ToolRunner,
  deferred: boolean,
): Promise<unknown> {
  const ctx = new CallContext(call.id, state, batch);
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    if (batch.aborted) throw batch.cancellation.reason ?? new Error("aborted");
    const timeoutMs = tool.timeoutMs;
    let timedOut: Promise<never> | undefined;
    if (timeoutMs !== undefined) {
      const callController = ctx.own();
      timedOut = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          const error = new ToolTimeoutError(`timed out after ${timeoutMs} ms`);
          // Rejected before the abort: a tool that settles as soon as its signal aborts must not
          // win the race against its own timeout.
          reject(error);
          callController.abort(error);
        }, timeoutMs);
      });
    }
    const running = deferred
      ? Promise.resolve().then(() => {
          // Cancelled between validation and the call: do not start work nobody will read.
          if (batch.aborted) throw batch.cancellation.reason;
          return runner(tool, args, ctx);
        })
      : // Checked for an abort just above, with nothing awaited since. A synchronous throw is caught as a rejection would be.
        runner(tool, args, ctx);
    return await (timedOut ? Promise.race([running, timedOut]) : running);
  } finally {
    if (timer) clearTimeout(timer);
    ctx.release();
  }
}

/** A call of a tool with `retries`: each failure but the last is reported, and the call runs again (actors/tool-retry.ts). */
function runRetried(
  tool: Tool,
  args: Record<string, unknown>,
  call: ToolCall,
  run: { state: Record<string, unknown>; batch: BatchAborts; runner: ToolRunner; deferred: boolean; maxOutputChars: number; report: (event: ToolProgress) => void },
): Promise<unknown> {
  return withRetries(tool, (attempt) => runWithLimits(tool, args, call, run.state, run.batch, run.runner, run.deferred && attempt === 1), {
    stopped: run.batch.stopped,
    aborted: () => run.batch.aborted,
    retrying: (attempt, error, delayMs) => {
      const { kind, message } = failureText(call, error, run.maxOutputChars);
      run.report({ type: "tool.call.retrying", callId: call.id, name: call.name, attempt, attempts: tool.retries! + 1, delayMs, error: message, errorKind: kind });
    },
  });
}

/**
 * What a call that threw or timed out tells the model. A thrown message is an observation too: cut
 * like an output, so it cannot blow the context.
 */
function failureText(call: ToolCall, error: unknown, maxChars: number): { kind: "timeout" | "threw"; message: string } {
  if (isTimeout(error)) return { kind: "timeout", message: `${call.name} ${error.message}` };
  return { kind: "threw", message: truncateOutput(`${call.name} failed: ${errorText(error)}`, maxChars) };
}

/** `instanceof` runs a Proxy's getPrototypeOf trap, which may throw: a thrown Proxy is not a timeout. */
function isTimeout(error: unknown): error is ToolTimeoutError {
  try {
    return error instanceof ToolTimeoutError;
  } catch {
    return false;
  }
}

/** Never throws, whatever was thrown (a Symbol, a null-prototype object, a throwing toString). */
function errorText(error: unknown): string {
  return thrownMessage(error);
}

/** What the journal holds for a call, or that it could not be read (a run being stopped is not that: it throws on). */
async function journalView(journal: ToolJournal, key: JournalKey): Promise<Exclude<JournalView, "unread"> | "unreadable"> {
  try {
    return (await journal.lookup(key)) ?? "empty";
  } catch (error) {
    if (error instanceof RunStoppedError) throw error;
    return "unreadable";
  }
}

/** Sent to the agent while the batch runs: started and finished calls, in batches. */
interface ToolProgressEvent {
  type: "tool.progress";
  progress: Progress<ToolProgress>[];
}

/**
 * The default tool executor: validates and runs the allowed or approved calls, and answers
 * denied, rejected and invalid ones with an observation, so every call gets exactly one
 * outcome, in call order whatever the completion order.
 */
export function createToolExecutorActor(deps: ExecutorDeps) {
  const runner = deps.runner ?? defaultRunner;
  const now = deps.now ?? Date.now;
  return fromReportingPromise<ExecutorOutput, ExecutorInput, ToolProgressEvent>(async (args) => {
    const { input, report: send } = args;
    // Not `args.signal`: reading it makes an AbortSignal, which most batches never need (cancellation.ts).
    const cancellation = args.cancellation ?? cancellationOf(args.signal);
    // Once stopped (cancel, final state, actor.stop) the parent is gone: calls winding down report to no one.
    const progress = new ProgressBatcher<ToolProgress>((batch) => {
      if (!cancellation.aborted) send?.({ type: "tool.progress", progress: batch });
    }, now);
    const report = (event: ToolProgress) => progress.push(event);
    const owner = deps.owners?.claim(input);
    // Tools that are ready are taken as they are: awaiting a settled promise costs a turn every round.
    const toolset = deps.toolsetNow?.(input.runId, owner) ?? (await deps.toolset(input.runId, owner));
    const batch = new BatchAborts(cancellation);
    const decisionOf = new Map(input.decisions.map((d) => [d.callId, d]));
    /** Tell the agent how a call ended (after the journal has it). */
    const reportOutcome = (outcome: ToolOutcome): ToolOutcome => {
      const durationMs = outcome.durationMs ?? 0;
      if (outcome.status === "ok") {
        report({ type: "tool.call.completed", callId: outcome.callId, name: outcome.name, durationMs, output: outcome.content });
      } else {
        report({ type: "tool.call.failed", callId: outcome.callId, name: outcome.name, durationMs, ...failureOf(outcome) });
      }
      return outcome;
    };

    // The same for every call of the batch: made once, not per call.
    const journal = deps.journal;
    const lookup = (name: string) => toolset.get(name);
    const toolNames = () => toolset.list().map((t) => t.name);

    /** Acts on the call's plan (actors/call-plan.ts): runs, journals and reports; the decisions are the plan's. */
    const runOne = async (call: ToolCall): Promise<ToolOutcome> => {
      const facts = { call, decision: decisionOf.get(call.id), lookup, toolNames, offered: input.offered };
      const first = planCall(journal ? { ...facts, journal: "unread" } : facts);
      if (first.kind === "answer") return first.outcome;
      report({ type: "tool.call.started", callId: call.id, name: call.name, arguments: first.arguments });
      const started = now();
      const fail = (kind: ToolErrorKind, message: string) => reportOutcome(failedOutcome(call, kind, message, now() - started));
      const key: JournalKey = { runId: input.runId, iteration: input.iteration ?? 0, callId: call.id };
      let plan: Exclude<CallPlan<Tool>, { kind: "readJournal" }>;
      if (first.kind !== "readJournal") plan = first;
      else {
        const view = journal ? await journalView(journal, key) : "empty";
        // Not the error's text: it is the infrastructure's (a database, a file), and this goes to the model.
        if (view === "unreadable") return fail("journal_unavailable", `${call.name} was not run: the tool journal could not be read`);
        // Stopped meanwhile: a queue worker may hold the run again, and the journal would take a claim
        // or an "interrupted" from this stopped copy under the new holder's fence. Neither is written.
        if (cancellation.aborted) return fail("aborted", `${call.name} was cancelled`);
        plan = planCall({ ...facts, journal: view });
      }
      /** Journal the outcome before anyone sees it, then report it (at once when no journal is kept: nothing to wait for). */
      // Not an async function: returning its promise from runOne would cost two more microtask turns.
      const finish = (outcome: ToolOutcome): ToolOutcome | Promise<ToolOutcome> => {
        if (!journal) return reportOutcome(outcome);
        return (async () => {
          try {
            await journal.completed(key, outcome);
          } catch {
            // The outcome is real and the run goes on with it; only a crash before the next
            // checkpoint would now turn this call into an unknown outcome.
          }
          return reportOutcome(outcome);
        })();
      };
      switch (plan.kind) {
        // Decided by the decision alone, so answered above; kept for the type's sake.
        case "answer":
          return plan.outcome;
        // Already ran before a restart: the model gets the recorded outcome, the tool is not run again.
        case "replay":
          return reportOutcome(plan.outcome);
        case "refuse":
          return fail(plan.errorKind, plan.message);
        case "interrupted":
          return finish(failedOutcome(call, plan.errorKind, plan.message, 0));
        case "run":
          break;
      }
      const { tool, args } = plan;
      if (journal && plan.claim) {
        let claimed: boolean;
        try {
          claimed = (await journal.started(key, call.name)) !== false;
        } catch (error) {
          if (error instanceof RunStoppedError) throw error;
          return fail("journal_unavailable", `${call.name} was not run: the tool journal could not be written`);
        }
        if (!claimed) {
          return fail(
            "already_claimed",
            `${call.name} was not run here: another copy of this run claimed this call first (the same run is being continued twice). ` +
              "Its result is recorded by that copy.",
          );
        }
      }
      let outcome: ToolOutcome;
      try {
        const value =
          tool.retries === undefined
            ? await runWithLimits(tool, args, call, input.state, batch, runner, parallel)
            : await runRetried(tool, args, call, { state: input.state, batch, runner, deferred: parallel, maxOutputChars: input.maxOutputChars, report });
        if (isToolContent(value)) {
          const content = checkedToolContent(value, input.maxOutputChars);
          if ("problem" in content) return finish(failedOutcome(call, "invalid_output", `${call.name} ran, but ${content.problem}`, now() - started));
          return finish(succeededOutcome(call, tool, content.text, now() - started, content.parts));
        }
        const rendered = renderResult(value);
        if (rendered.problem !== undefined) {
          return finish(failedOutcome(call, "invalid_output", `${call.name} ran, but ${rendered.problem}`, now() - started));
        }
        outcome = succeededOutcome(call, tool, truncateOutput(rendered.text, input.maxOutputChars), now() - started);
      } catch (error) {
        // Not journaled: the run is being stopped, and whether the tool got to act is unknown.
        if (!isTimeout(error) && cancellation.aborted) return fail("aborted", `${call.name} was cancelled`);
        const { kind, message } = failureText(call, error, input.maxOutputChars);
        outcome = failedOutcome(call, kind, message, now() - started);
      }
      return finish(outcome);
    };

    const runnable = input.calls.filter((call) => mayRun(decisionOf.get(call.id)));
    const parallel =
      input.mode === "parallel" ||
      (input.mode === "auto" && runnable.length > 1 && runnable.every((call) => toolset.get(call.name)?.parallelSafe === true));

    const serially = async () => {
      const outcomes: ToolOutcome[] = [];
      for (const call of input.calls) {
        // Stopped mid-batch: the calls not yet begun are not begun (nor journaled as started).
        if (cancellation.aborted) break;
        outcomes.push(await runOne(call));
      }
      return outcomes;
    };
    let outcomes: ToolOutcome[];
    try {
      // Stopped (cancel, actor.stop): end now, whatever the calls still running do.
      outcomes = await Promise.race([parallel ? Promise.all(input.calls.map(runOne)) : serially(), batch.stopped]);
    } catch (error) {
      progress.flush();
      throw error;
    } finally {
      batch.release();
    }
    return progress.attachTo({ outcomes });
  });
}
