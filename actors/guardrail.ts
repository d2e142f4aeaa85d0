import { fromPromise } from "xstate";
import { JianmuError } from "../tools/jianmu-error.js";
import { toErrorInfo } from "./errors.js";
import { GuardrailSpending, type GuardrailMoney, type GuardrailSpend } from "./guardrail-spend.js";
import { JudgeCallLog } from "./judge-call-log.js";
import { meterStep } from "./step-host.js";
import type { Message } from "./messages.js";
import type { ModelClient } from "./model-client.js";
import type { ToolJournal } from "./tool-journal.js";

/**
 * Guardrails: checks of what goes into a run (the user's input, before or beside the first model
 * call) and of what comes out (the final answer and its typed output). Each answers pass, trip (the
 * run fails: guardrailTripped) or retry (the feedback goes to the model, an iteration is spent). The
 * machine invokes them as an actor with the rules tools have: a time limit per guardrail, a signal
 * that aborts when the run stops needing the answer, and a throw (or a timeout, or an answer that is
 * not a verdict) counts as a trip: a check that cannot say "pass" does not let anything through.
 */

/** Where a guardrail looks: the run's input, or its final answer. */
export type GuardrailStage = "input" | "output";

/** An input guardrail runs before the first model call (`blocking`), or beside it (`parallel`: a trip cancels the call). */
export type GuardrailMode = "blocking" | "parallel";

/** What a guardrail answers. */
export type GuardrailVerdict = { verdict: "pass" } | { verdict: "trip"; reason: string } | { verdict: "retry"; feedback: string };

/** What a guardrail checks. Plain data. */
export interface GuardrailSubject {
  stage: GuardrailStage;
  /** `input`: the last user message; `output`: the final answer's text (a structured output's JSON). */
  text: string;
  /** `output` with an output schema: the typed output. */
  value?: unknown;
  /** The conversation so far. */
  messages: Message[];
}

export interface GuardrailContext {
  runId: string;
  iteration: number;
  /** A read-only view of the agent's state. */
  state: Record<string, unknown>;
  /** Aborts when the answer is no longer needed: the run was cancelled, another guardrail tripped, or the time limit passed. */
  signal: AbortSignal;
  /**
   * `client` with its calls counted as the run's spending (an LLM judge): their usage joins the run's
   * `usage`, and with `maxBudgetTokens` / `maxBudgetCost` each call is capped by what the run has left
   * (one whose prompt alone would cross a budget is not made: it throws, and the guardrail trips).
   * Parallel input guardrails cannot call a model within a budget (the round's model call may spend
   * all of it): they are refused; make such a guardrail blocking.
   */
  budgeted(client: ModelClient): ModelClient;
}

export interface Guardrail {
  /** Names the guardrail in the termination and the `guardrail.tripped` event. */
  readonly name: string;
  /** Input guardrails only (default `blocking`). */
  readonly mode?: GuardrailMode;
  /** The most the check may take, in ms; past it the guardrail trips. */
  readonly timeoutMs?: number;
  check(subject: GuardrailSubject, ctx: GuardrailContext): GuardrailVerdict | Promise<GuardrailVerdict>;
}

export class GuardrailDefinitionError extends JianmuError {
  static override readonly errorCode = "GUARDRAIL_DEFINITION_ERROR";
  override name = "GuardrailDefinitionError";
  constructor(
    readonly guardrail: string,
    readonly field: string,
    problem: string,
  ) {
    super(`guardrail ${guardrail}: ${field} ${problem}`);
  }
}

/** Check a guardrail's definition (each mistake named), and return it as given. */
export function defineGuardrail(guardrail: Guardrail): Guardrail {
  const name = typeof guardrail?.name === "string" ? guardrail.name : "(unnamed)";
  if (!guardrail || typeof guardrail !== "object") throw new GuardrailDefinitionError(name, "(definition)", "must be an object { name, check, mode?, timeoutMs? }");
  if (typeof guardrail.name !== "string" || guardrail.name.trim() === "") throw new GuardrailDefinitionError(name, "name", "must be a non-empty string");
  if (typeof guardrail.check !== "function") throw new GuardrailDefinitionError(name, "check", "must be a function (subject, ctx) => { verdict: 'pass' | 'trip' | 'retry', ... }");
  if (guardrail.mode !== undefined && guardrail.mode !== "blocking" && guardrail.mode !== "parallel") {
    throw new GuardrailDefinitionError(name, "mode", `must be "blocking" or "parallel", got ${JSON.stringify(guardrail.mode)}`);
  }
  if (guardrail.timeoutMs !== undefined && !(Number.isFinite(guardrail.timeoutMs) && guardrail.timeoutMs > 0)) {
    throw new GuardrailDefinitionError(name, "timeoutMs", `must be a positive number of milliseconds, got ${String(guardrail.timeoutMs)}`);
  }
  return guardrail;
}

/**
 * What the guardrail step decided: any trip wins (the first to trip), then the first retry in order,
 * else pass; with what its guardrails' budgeted model calls spent (`spent`), which the run counts.
 */
export type GuardrailOutcome = (
  | { verdict: "pass" }
  | { verdict: "trip"; guardrail: string; reason: string }
  | { verdict: "retry"; guardrail: string; feedback: string }
) & { spent?: GuardrailSpend };

/** The guardrail step's input, from the machine (plain JSON: it is persisted). */
export interface GuardrailInput {
  subject: GuardrailSubject;
  runId: string;
  iteration: number;
  state: Record<string, unknown>;
  /** Nothing to check this time (the parallel input guardrails after they answered): the step waits forever. */
  skip?: boolean;
  /** What the run may still spend, and its prices, for `ctx.budgeted` calls. */
  money?: GuardrailMoney;
}

/** How a guardrail step runs beyond its input: what stops it, who meters it, where its judge calls are recorded. */
export interface GuardrailRun {
  stop?: AbortSignal;
  /** The actor whose meter holds what the step's budgeted calls spent so far (actors/step-host.ts). */
  meteredAs?: object;
  /** The run's tool journal: with a budget, each judge call is recorded there before it is made. */
  journal?: ToolJournal;
}

const PASS: GuardrailOutcome = Object.freeze({ verdict: "pass" });

/** A guardrail's answer as an outcome; anything that is not a verdict trips. */
function outcomeOf(guardrail: Guardrail, answer: unknown): GuardrailOutcome {
  const a = (typeof answer === "object" && answer !== null ? answer : {}) as Record<string, unknown>;
  if (a["verdict"] === "pass") return PASS;
  if (a["verdict"] === "trip" && typeof a["reason"] === "string") return { verdict: "trip", guardrail: guardrail.name, reason: a["reason"] };
  if (a["verdict"] === "retry" && typeof a["feedback"] === "string") return { verdict: "retry", guardrail: guardrail.name, feedback: a["feedback"] };
  let shown: string;
  try {
    shown = JSON.stringify(answer) ?? String(answer);
  } catch {
    shown = String(answer);
  }
  return { verdict: "trip", guardrail: guardrail.name, reason: `it answered ${shown.slice(0, 200)}, not { verdict: "pass" | "trip" (with reason) | "retry" (with feedback) }` };
}

/** One guardrail's check, within its time limit; a throw or a timeout trips. */
async function checkOne(guardrail: Guardrail, input: GuardrailInput, controller: AbortController, spending: GuardrailSpending): Promise<GuardrailOutcome> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    const ctx: GuardrailContext = { runId: input.runId, iteration: input.iteration, state: input.state, signal: controller.signal, budgeted: (client) => spending.client(client) };
    const checking = Promise.resolve().then(() => guardrail.check(input.subject, ctx));
    if (guardrail.timeoutMs === undefined) return outcomeOf(guardrail, await checking);
    const limit = guardrail.timeoutMs;
    const timedOut = new Promise<GuardrailOutcome>((resolve) => {
      timer = setTimeout(() => {
        resolve({ verdict: "trip", guardrail: guardrail.name, reason: `it gave no answer within ${limit} ms` });
        controller.abort(new Error(`guardrail ${guardrail.name} timed out after ${limit} ms`));
      }, limit);
    });
    return await Promise.race([checking.then((answer) => outcomeOf(guardrail, answer)), timedOut]);
  } catch (error) {
    return { verdict: "trip", guardrail: guardrail.name, reason: `it threw: ${toErrorInfo(error).message}` };
  } finally {
    if (timer) clearTimeout(timer);
  }
}

/**
 * Run the guardrails side by side. The first trip decides at once (the others are aborted);
 * otherwise, once all have answered, the first retry in their order, else pass. `stop` aborts them all.
 * With a budget and `run.journal`, the judge calls recorded for this step by an earlier process of the run count first.
 */
export async function runGuardrails(guardrails: readonly Guardrail[], input: GuardrailInput, run: GuardrailRun = {}): Promise<GuardrailOutcome> {
  if (guardrails.length === 0) return PASS;
  const { stop, meteredAs, journal } = run;
  const log = journal && input.money?.spend ? new JudgeCallLog(journal, { runId: input.runId, iteration: input.iteration, stage: input.subject.stage }) : undefined;
  const spending = new GuardrailSpending(input.money, log);
  // With a budget, what the checks spent so far stays readable by the run, in case it ends before their verdict.
  const unmeter = meteredAs && input.money?.spend ? meterStep(meteredAs, "guardrails", spending) : undefined;
  // A process that ran this step before (the run was restored from an earlier checkpoint) may have made judge calls: they count first.
  await spending.countEarlierCalls();
  // One controller per check, released with it; the step's own signal lives only as long as the step.
  const controllers = guardrails.map(() => new AbortController());
  const abortAll = (reason?: unknown) => controllers.forEach((c) => c.abort(reason));
  const onStop = () => abortAll(stop?.reason);
  stop?.addEventListener("abort", onStop, { once: true });
  if (stop?.aborted) onStop();
  return new Promise<GuardrailOutcome>((resolve) => {
    const retries: (GuardrailOutcome | undefined)[] = [];
    let left = guardrails.length;
    let decided = false;
    const settle = (outcome: GuardrailOutcome) => {
      decided = true;
      stop?.removeEventListener("abort", onStop);
      unmeter?.();
      // What the budgeted calls spent up to now (a call still under way at its bound) is the run's, whatever the verdict.
      const spent = spending.total();
      resolve(spent ? { ...outcome, spent } : outcome);
    };
    guardrails.forEach((guardrail, index) => {
      void checkOne(guardrail, input, controllers[index]!, spending).then((outcome) => {
        if (decided) return;
        if (outcome.verdict === "trip") {
          abortAll(new Error(`guardrail ${outcome.guardrail} tripped`));
          return settle(outcome);
        }
        if (outcome.verdict === "retry") retries[index] = outcome;
        if (--left === 0) settle(retries.find((r) => r !== undefined) ?? PASS);
      });
    });
  });
}

/** The guardrail step for one list of guardrails (the machine has one per stage and mode), recording its judge calls in `journal`. */
export function createGuardrailActor(guardrails: readonly Guardrail[], journal?: ToolJournal) {
  return fromPromise<GuardrailOutcome, GuardrailInput>(({ input, signal, self }) =>
    // Nothing to wait for: no timer, no promise that settles (like the approval timer without a deadline).
    input.skip ? new Promise<GuardrailOutcome>(() => {}) : runGuardrails(guardrails, input, { stop: signal, meteredAs: self, ...(journal ? { journal } : {}) }),
  );
}
