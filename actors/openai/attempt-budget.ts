import { ModelError, type ModelTurn } from "../model-client.js";
import { allowance, attemptBound, type SpendLimit } from "../spend.js";
import { AttemptError, type AttemptFailure } from "./model-failure.js";

/**
 * One call's budget across its attempts (retries and fallbacks). Each attempt asks for at most what
 * is left on its own model after what the earlier attempts may have spent; an attempt that would
 * cross a budget is not made (an `AttemptError` of kind `budget`: the next fallback may be cheaper).
 * An attempt that failed after reaching the server without reporting usage may still have been
 * billed, up to its prompt and its cap: that much is counted against the next attempts, and reported
 * on the turn as `unreported`.
 */
export class AttemptBudget {
  private readonly spent = { tokens: 0, cost: 0 };

  constructor(private readonly limit: SpendLimit) {}

  /** The next attempt's `maxTokens` on `model` (undefined: none is sent); throws when nothing is left for it. */
  cap(model: string): number | undefined {
    const allowed = allowance(this.limit, model, this.spent);
    if ("refused" in allowed) {
      throw new AttemptError({ category: "config", kind: "budget", code: allowed.refused.budget, message: allowed.refused.message, delivered: false });
    }
    return allowed.maxTokens;
  }

  /**
   * Waits for one attempt made with `cap`, counting what it may have cost when it fails without a
   * word: its prompt and its cap (without one, the cap any model takes: the budget did not bind then).
   */
  async track(model: string, cap: number | undefined, attempt: Promise<ModelTurn>): Promise<ModelTurn> {
    try {
      const turn = await attempt;
      return this.spent.tokens > 0 ? Object.assign(turn, { unreported: { ...this.spent } }) : turn;
    } catch (error) {
      if (error instanceof AttemptError && mayHaveBeenBilled(error.failure)) {
        const bound = attemptBound(this.limit.promptTokens, cap, this.limit.pricing, model);
        this.spent.tokens += bound.tokens;
        this.spent.cost += bound.cost;
      }
      throw error;
    }
  }

  /** The call failed for good: what its attempts may have cost goes on the error, for the budgets of whoever goes on spending. */
  charge(error: unknown): never {
    if (this.spent.tokens > 0 && error instanceof ModelError) error.unreported = { ...this.spent };
    throw error;
  }
}

/**
 * A server that answers with an HTTP status refused the request (rate limit, overload, bad request)
 * and bills nothing; an attempt never sent (`config`) costs nothing either. Anything else (a timeout,
 * a dropped connection, a broken or malformed stream) may have been processed, and billed.
 */
function mayHaveBeenBilled(failure: AttemptFailure): boolean {
  return failure.status === undefined && failure.category !== "config";
}
