import type { ModelCallEvent, ModelRequest, UnreportedSpend } from "./model-client.js";
import type { Pricing } from "./pricing.js";
import { afterLostCall, attemptBound, withinSpend, withLost, type SpendInput } from "./spend.js";
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

/** A budgeted call as it begins: its request capped by what the run may spend, and its meter. */
export interface BudgetedCall {
  request: ModelRequest;
  /** The prompt's tokenizer estimate, when the budget was near enough to ask for one (`withinSpend`). */
  estimate?: number;
  /** What the call a restored run makes again may have cost the process that saved the run (`afterLostCall`). */
  lost?: UnreportedSpend;
  meter: CallMeter;
  /** Takes the meter back when the call ends: its outcome says what it cost from there. */
  release: () => void;
}

/**
 * A budgeted model call that `actor` (the step running it, or the step host running the step) makes
 * as `step` begins. Made again for a restored run (`again`; not a fork's call at its fork point, which
 * was the original run's), the call the saved run's process may have made counts first. The request
 * is then capped by what is left (`withinSpend`: over budget it is not made, a SpendLimitError that
 * carries the lost call) and metered while it runs, in case the run ends meanwhile (`meterStep`).
 */
export function beginBudgetedCall(
  actor: object,
  step: string,
  request: ModelRequest,
  spend: SpendInput,
  clientModel: string | undefined,
  restart: { again?: true | undefined; forkPoint?: true | undefined },
): BudgetedCall {
  const restored = restart.again && !restart.forkPoint ? afterLostCall(request, spend, clientModel) : undefined;
  let within: ReturnType<typeof withinSpend>;
  try {
    within = withinSpend(request, restored?.spend ?? spend);
  } catch (error) {
    throw withLost(error, restored?.lost);
  }
  const { limit, estimate } = within;
  const meter = new CallMeter(limit.promptTokens, within.request.maxTokens, limit.pricing, within.request.model ?? clientModel, restored?.lost);
  return {
    request: within.request,
    ...(estimate !== undefined ? { estimate } : {}),
    ...(restored ? { lost: restored.lost } : {}),
    meter,
    release: meterStep(actor, step, meter),
  };
}
