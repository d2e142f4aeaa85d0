import type { ModelCallEvent, ModelRequest, UnreportedSpend } from "./model-client.js";
import type { Pricing } from "./pricing.js";
import { attemptBound, type SpendLimit } from "./spend.js";
import { meterStep } from "./step-host.js";

/**
 * What a model call under way may have been billed so far, with no answer yet: each attempt that
 * left counts at its prompt and its cap (as `AttemptBudget` counts an attempt that fails without a
 * word), less the attempts a server refused with a status or that were never made. A run that ends
 * while the call runs (a cancel, a deadline, a guardrail tripping beside it) counts the call at
 * this, since no outcome of it will ever reach the run (see `meterStep`).
 */
export class CallMeter implements UnreportedSpend {
  tokens = 0;
  cost = 0;
  private readonly attempts = new Map<number, UnreportedSpend>();

  /**
   * `promptTokens` and `cap`: the call's as the budget limited it (`attemptBound`); `model`: the model a request that
   * names none goes to; `before`: what the call had cost before it began (the lost call a restored
   * run makes again, `afterLostCall`). The first attempt counts from the start, for a client that
   * reports no attempts.
   */
  constructor(
    private readonly promptTokens: number,
    private readonly cap: number | undefined,
    private readonly pricing: Pricing | undefined,
    private readonly model: string | undefined,
    before?: UnreportedSpend,
  ) {
    if (before) {
      this.tokens = before.tokens;
      this.cost = before.cost;
    }
    this.count(1, model);
  }

  /** A model client's report: an attempt began, or one was refused or never made. */
  heard(event: ModelCallEvent): void {
    if (event.type === "model.call.started") this.count(event.attempt, event.model);
    else if (event.type === "model.call.failed" && (event.status !== undefined || event.kind === "config" || event.kind === "budget")) this.uncount(event.attempt);
  }

  private count(attempt: number, model: string | undefined): void {
    if (this.attempts.has(attempt)) return;
    const bound = attemptBound(this.promptTokens, this.cap, this.pricing, model ?? this.model);
    this.attempts.set(attempt, bound);
    this.tokens += bound.tokens;
    this.cost += bound.cost;
  }

  private uncount(attempt: number): void {
    const bound = this.attempts.get(attempt);
    if (!bound) return;
    this.attempts.set(attempt, { tokens: 0, cost: 0 });
    this.tokens -= bound.tokens;
    this.cost -= bound.cost;
  }
}

/**
 * Meter a budgeted call that `actor` (the step running it, or the step host running the step) makes
 * as `step`: the request and limit as `withinSpend` made them. `release` takes the meter back when the
 * call ends (its outcome says what it cost from there); `before`: see the constructor.
 */
export function meterCall(
  actor: object,
  step: string,
  within: { request: ModelRequest; limit: SpendLimit },
  clientModel: string | undefined,
  before?: UnreportedSpend,
): { meter: CallMeter; release: () => void } {
  const { request, limit } = within;
  const meter = new CallMeter(limit.promptTokens, request.maxTokens, limit.pricing, request.model ?? clientModel, before);
  return { meter, release: meterStep(actor, step, meter) };
}
