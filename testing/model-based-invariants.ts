import type { z } from "zod";
import type { CallDecision } from "../actors/guard.js";
import type { LLMInput } from "../actors/llm-step.js";
import type { ModelRequest } from "../actors/model-client.js";
import type { ExecutorInput } from "../actors/tool-executor.js";
import type { ReActConfig } from "../machines/contract/config.js";
import type { AgentOutput } from "../machines/contract/context.js";
import { TERMINATION_REASONS } from "../machines/contract/events.js";
import type { StateAccess } from "../machines/contract/state-access.js";
import { fieldMeta } from "../machines/contract/state.js";
import { awaitedBy, type AgentSnapshot, type Microstep, type AskedStep } from "./model-based-pure.js";
import { JianmuError } from "../tools/jianmu-error.js";

/**
 * The loop's safety rules, checked on every microstep of a run, pure or live:
 * - `onlyAuthorizedCallsRun`: when Executing starts, every call the executor would run was
 *   allowed by the guard verdicts the test expects, or approved by a `guard.approve` for that
 *   call while it was pending; no call is still pending; live, every `tool.call.started` is one
 *   of those calls.
 * - `iterationsWithinLimit`: `loop.iteration` never exceeds `maxIterations`, nor do model calls.
 * - `failedHasReason`: `Failed` always carries a termination reason (and `Succeeded` none).
 * - `iterationStartsClean`: entering `Evaluating.CheckAbort`, every step field is back to its
 *   default (so old calls never run twice) and no decision is left over.
 * - `toolChoiceOnFirstRoundOnly`: the model step gets `toolChoice` (and `toolChoice`/`tool_choice`
 *   extra params) only with `rounds === 0`, and always then when one is configured; on any round,
 *   exactly what that round's `prepareRound` plan asked for.
 * - `reasoningIsNotOutput`: each batch of model progress grows `streamingOutput` by exactly its
 *   streamed text; the model's reasoning (`reasoning.delta`) never becomes part of the answer.
 * - `guardrailsFirst`: no model call starts before the blocking input guardrails have had their say,
 *   no tool (or nested agent) before the parallel ones have, and with output guardrails the run
 *   succeeds only from `GuardingOutput`.
 */

export type InvariantName = "onlyAuthorizedCallsRun" | "iterationsWithinLimit" | "failedHasReason" | "iterationStartsClean" | "toolChoiceOnFirstRoundOnly" | "reasoningIsNotOutput" | "guardrailsFirst";

/** Which guardrail states the chart has (read from its definition). */
export interface GuardrailStates {
  blockingInput: boolean;
  parallelInput: boolean;
  output: boolean;
}

const NO_GUARDRAILS: GuardrailStates = { blockingInput: false, parallelInput: false, output: false };

export interface Violation {
  readonly invariant: InvariantName;
  readonly message: string;
  /** Index of the path event during which it happened (0 is the start). */
  readonly step: number;
}

/** A run broke one of the loop's invariants. */
export class InvariantViolation extends JianmuError {
  static override readonly errorCode = "INVARIANT_VIOLATION";
  override name = "InvariantViolation";
  constructor(
    readonly violations: readonly Violation[],
    where: string,
  ) {
    super(`${where}: ${violations.length} invariant violation(s):\n${violations.map((v) => `  - [${v.invariant}] at step ${v.step}: ${v.message}`).join("\n")}`);
  }
}

const KNOWN_REASONS: ReadonlySet<string> = new Set(TERMINATION_REASONS);
const TOOL_CHOICE_KEYS = ["toolChoice", "tool_choice"];

const CHECK_ABORT = { Evaluating: "CheckAbort" } as const;
const EXECUTING = { Evaluating: { ChildRunning: { ToolExecutor: "Executing" } } } as const;
const GUARDING_OUTPUT = { Evaluating: { ChildRunning: "GuardingOutput" } } as const;

function isDeepEqual(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

export class InvariantChecker {
  readonly violations: Violation[] = [];
  /** Set by the runner: the path event being processed. */
  step = 0;
  private last: AgentSnapshot | undefined;
  private readonly seenChildren = new WeakSet<object>();
  private modelCalls = 0;
  /** What each round's plan (`prepareRound`) allowed beyond the first-round rule, by round. */
  private readonly planned = new Map<number, { toolChoice: boolean; keys: Set<string> }>();
  /** The guard verdicts the test expects for the current batch, by call id. */
  private expected = new Map<string, CallDecision>();
  /** Calls approved by a `guard.approve` while pending, in the current batch. */
  private approved = new Set<string>();
  /**
   * Calls the executor may run, by iteration. Kept per iteration, not reset: a batch's last
   * progress is reported with its result, which the agent may process in the same macrostep as
   * the start of the next iteration.
   */
  private readonly authorized = new Map<number, Set<string>>();
  /** Every call authorized in this run (for checks on what tools really ran). */
  readonly everAuthorized = new Set<string>();

  constructor(
    private readonly access: StateAccess,
    private readonly config: ReActConfig,
    /** The chart runs no guard actor (an agent without constraints): every call is expected to be allowed. */
    private readonly unguarded = false,
    private readonly guardrails: GuardrailStates = NO_GUARDRAILS,
  ) {}

  /** The verdict the test expects for a call of the current batch. */
  private expectedStatus(callId: string): CallDecision["status"] | undefined {
    return this.expected.get(callId)?.status ?? (this.unguarded ? "allowed" : undefined);
  }

  /** The verdicts the guard step is expected to give for the batch about to be decided. */
  expectDecisions(decisions: readonly CallDecision[]): void {
    this.expected = new Map(decisions.map((d) => [d.callId, d]));
  }

  observe(microstep: Microstep): void {
    const { snapshot } = microstep;
    const previous = this.last;
    this.last = snapshot;
    const { loop, state } = snapshot.context;

    if (loop.iteration > this.config.maxIterations) {
      this.fail("iterationsWithinLimit", `loop.iteration is ${loop.iteration}, above maxIterations ${this.config.maxIterations}`);
    }
    if (snapshot.matches("Failed")) {
      if (!loop.termination) this.fail("failedHasReason", "the run is Failed without a termination");
      else if (!KNOWN_REASONS.has(loop.termination.reason)) this.fail("failedHasReason", `Failed with unknown reason ${JSON.stringify(loop.termination.reason)}`);
    }
    if (snapshot.matches("Succeeded") && loop.termination) this.fail("failedHasReason", `Succeeded but carries termination ${loop.termination.reason}`);
    if (this.guardrails.output && snapshot.matches("Succeeded") && previous && !previous.matches("Succeeded") && !previous.matches(GUARDING_OUTPUT)) {
      this.fail("guardrailsFirst", `the run succeeded from ${JSON.stringify(previous.value)}, without its output guardrails`);
    }

    if (snapshot.matches(CHECK_ABORT) && !previous?.matches(CHECK_ABORT)) {
      for (const field of this.access.fields) {
        const schema = this.access.schema.shape[field] as z.ZodType | undefined;
        if (!schema || fieldMeta(schema).lifetime !== "step") continue;
        const fresh = schema.safeParse(undefined);
        const value = this.access.read(state, field);
        if (!fresh.success || !isDeepEqual(value, fresh.data)) {
          this.fail("iterationStartsClean", `step field "${field}" is ${JSON.stringify(value)} at the start of iteration ${loop.iteration}`);
        }
      }
      if (loop.decisions.length > 0) this.fail("iterationStartsClean", `${loop.decisions.length} decision(s) left over at the start of iteration ${loop.iteration}`);
      this.expected = new Map();
      this.approved = new Set();
    }

    this.trackApprovals(previous, snapshot, microstep);
    if (previous && microstep.event.type === "llm.progress") this.checkStreamedOutput(previous, snapshot, microstep.event as { progress?: unknown });

    for (const request of microstep.requests ?? []) this.requested(request, snapshot);
    for (const child of awaitedBy(snapshot)) if (!child.hosted) this.started(child.key, child.src, child.input, snapshot);
  }

  /** Live: the agent asked its step host for a step (seen by an inspector; `snapshot`: the agent's, when it asked). */
  requested(request: AskedStep, snapshot: AgentSnapshot): void {
    // Asked again when the host starts (a restored run): the same call, made again, not another one.
    if ((request.event as { again?: unknown }).again === true) return;
    this.started(request.event, request.step, request.input, snapshot);
  }

  /** A child started, or a step was asked for: checked once. */
  private started(key: object, src: string, input: unknown, snapshot: AgentSnapshot): void {
    if (this.seenChildren.has(key)) return;
    this.seenChildren.add(key);
    if (src === "llm") this.checkModelCall(input as LLMInput | undefined, snapshot);
    if (src === "toolExecutor") this.checkExecution(input as ExecutorInput | undefined, snapshot);
    if (src.startsWith("agent.")) this.checkDelegation(snapshot);
    this.checkGuardrailsFirst(src, snapshot);
  }

  /** Live: the executor reported that a call of `iteration` started. */
  toolStarted(callId: string, name: string, iteration: number): void {
    if (!this.authorized.get(iteration)?.has(callId)) this.fail("onlyAuthorizedCallsRun", `tool ${name} (call ${callId}) started although the call was not allowed or approved`);
  }

  /** Live: the run's output agrees with how it ended. */
  checkOutput(output: AgentOutput): void {
    if (output.status === "failed" && !output.termination) this.fail("failedHasReason", "the failed run's output has no termination");
    if (output.status === "succeeded" && output.termination) this.fail("failedHasReason", `the succeeded run's output carries termination ${output.termination.reason}`);
  }

  /** Live: what the model really received; request `i` of a fresh run is round `i`. */
  checkModelRequests(requests: readonly ModelRequest[]): void {
    requests.forEach((request, round) => {
      if (round === 0) return;
      const planned = this.planned.get(round);
      if (request.toolChoice !== undefined && !planned?.toolChoice) this.fail("toolChoiceOnFirstRoundOnly", `model request #${round + 1} carried toolChoice ${JSON.stringify(request.toolChoice)}`);
      for (const key of TOOL_CHOICE_KEYS) {
        if (request.extraParams && key in request.extraParams && !planned?.keys.has(key)) this.fail("toolChoiceOnFirstRoundOnly", `model request #${round + 1} carried extraParams.${key}`);
      }
    });
  }

  private checkStreamedOutput(previous: AgentSnapshot, snapshot: AgentSnapshot, event: { progress?: unknown }): void {
    if (!this.access.fields.includes("streamingOutput")) return;
    const progress = Array.isArray(event.progress) ? (event.progress as { event?: { type?: unknown; delta?: unknown } }[]) : [];
    const text = progress.map(({ event: item }) => (item?.type === "text.delta" && typeof item.delta === "string" ? item.delta : "")).join("");
    const before = this.access.read<string>(previous.context.state, "streamingOutput") ?? "";
    const after = this.access.read<string>(snapshot.context.state, "streamingOutput") ?? "";
    if (after !== before + text) {
      this.fail("reasoningIsNotOutput", `streamingOutput went from ${JSON.stringify(before)} to ${JSON.stringify(after)} on progress that streamed ${JSON.stringify(text)} as text`);
    }
  }

  private trackApprovals(previous: AgentSnapshot | undefined, snapshot: AgentSnapshot, microstep: Microstep): void {
    if (!previous) return;
    const before = new Map(previous.context.loop.decisions.map((d) => [d.callId, d]));
    for (const d of snapshot.context.loop.decisions) {
      const was = before.get(d.callId);
      if (d.status !== "approved" || !was || was.status === "approved") continue;
      const event = microstep.event as { type: string; callId?: string };
      if (was.status === "pending" && event.type === "guard.approve" && event.callId === d.callId) this.approved.add(d.callId);
      else this.fail("onlyAuthorizedCallsRun", `call ${d.callId} (${d.name}) became approved from "${was.status}" on ${event.type}, not by its guard.approve`);
    }
  }

  private checkModelCall(input: LLMInput | undefined, snapshot: AgentSnapshot): void {
    this.modelCalls += 1;
    if (this.modelCalls > this.config.maxIterations) {
      this.fail("iterationsWithinLimit", `model call #${this.modelCalls} started, above maxIterations ${this.config.maxIterations}`);
    }
    if (!input) return;
    const rounds = this.access.read<number>(snapshot.context.state, "rounds");
    if (input.rounds !== rounds) this.fail("toolChoiceOnFirstRoundOnly", `the model step was told rounds=${input.rounds} while the state holds ${rounds}`);
    // A round's plan (prepareRound) may choose tools on any round: exactly what it asked for is allowed.
    const plan = snapshot.context.loop.round;
    const plannedKeys = new Set(Object.keys(plan?.extraParams ?? {}));
    this.planned.set(input.rounds, { toolChoice: plan?.toolChoice !== undefined, keys: plannedKeys });
    if (input.rounds !== 0) {
      if (input.toolChoice !== undefined && !isDeepEqual(input.toolChoice, plan?.toolChoice)) {
        this.fail("toolChoiceOnFirstRoundOnly", `toolChoice ${JSON.stringify(input.toolChoice)} sent with rounds=${input.rounds}`);
      }
      for (const key of TOOL_CHOICE_KEYS) {
        if (key in input.extraParams && !plannedKeys.has(key)) this.fail("toolChoiceOnFirstRoundOnly", `extraParams.${key} sent with rounds=${input.rounds}`);
      }
    } else if (plan?.toolChoice !== undefined) {
      if (!isDeepEqual(input.toolChoice, plan.toolChoice)) this.fail("toolChoiceOnFirstRoundOnly", `the round plan's toolChoice was not sent (got ${JSON.stringify(input.toolChoice)})`);
    } else if (this.config.toolChoice !== undefined && !isDeepEqual(input.toolChoice, this.config.toolChoice)) {
      this.fail("toolChoiceOnFirstRoundOnly", `the configured toolChoice was not sent on the first round (got ${JSON.stringify(input.toolChoice)})`);
    }
  }

  private checkExecution(input: ExecutorInput | undefined, snapshot: AgentSnapshot): void {
    if (!input) return;
    if (!snapshot.matches(EXECUTING)) return;
    const decisionOf = new Map(input.decisions.map((d) => [d.callId, d]));
    const authorized = new Set<string>();
    this.authorized.set(snapshot.context.loop.iteration, authorized);
    for (const call of input.calls) {
      const decision = decisionOf.get(call.id);
      if (!decision) continue;
      if (decision.status === "pending") {
        this.fail("onlyAuthorizedCallsRun", `call ${call.id} (${call.name}) reached Executing still pending approval`);
        continue;
      }
      if (decision.status !== "allowed" && decision.status !== "approved") continue;
      const expected = this.expectedStatus(call.id);
      if (decision.status === "allowed" && expected !== "allowed") {
        this.fail("onlyAuthorizedCallsRun", `call ${call.id} (${call.name}) would run as "allowed" but the guard verdict expected for it is ${expected ?? "none"}`);
        continue;
      }
      if (decision.status === "approved" && !this.approved.has(call.id)) {
        this.fail("onlyAuthorizedCallsRun", `call ${call.id} (${call.name}) would run as "approved" but no guard.approve for it was sent while it was pending`);
        continue;
      }
      authorized.add(call.id);
      this.everAuthorized.add(call.id);
    }
  }

  /** A nested agent started for a call (agentTool, handoff): the call must be allowed or approved like any other. */
  private checkDelegation(snapshot: AgentSnapshot): void {
    const current = snapshot.context.loop.delegation?.current;
    if (!current) return;
    const decision = snapshot.context.loop.decisions.find((d) => d.callId === current.callId);
    const expected = this.expectedStatus(current.callId);
    const ok = (decision?.status === "allowed" && expected === "allowed") || (decision?.status === "approved" && this.approved.has(current.callId));
    if (!ok) {
      this.fail("onlyAuthorizedCallsRun", `the nested agent for call ${current.callId} (${current.name}) started although the call is ${decision?.status ?? "undecided"}`);
      return;
    }
    const iteration = snapshot.context.loop.iteration;
    const authorized = this.authorized.get(iteration) ?? new Set<string>();
    this.authorized.set(iteration, authorized);
    authorized.add(current.callId);
    this.everAuthorized.add(current.callId);
  }

  private checkGuardrailsFirst(src: string, snapshot: AgentSnapshot): void {
    const guarded = snapshot.context.loop.inputGuarded;
    if (src === "llm" && this.guardrails.blockingInput && guarded?.blocking !== true) {
      this.fail("guardrailsFirst", "a model call started before the blocking input guardrails had their say");
    }
    if ((src === "toolExecutor" || src.startsWith("agent.")) && this.guardrails.parallelInput && guarded?.parallel !== true) {
      this.fail("guardrailsFirst", `${src === "toolExecutor" ? "tools ran" : "a nested agent started"} before the parallel input guardrails had their say`);
    }
  }

  private fail(invariant: InvariantName, message: string): void {
    this.violations.push({ invariant, message, step: this.step });
  }
}
