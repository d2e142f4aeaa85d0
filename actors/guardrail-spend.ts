import { addUsage, isSaneUsage, saneUsage, type ModelCallOptions, type ModelClient, type ModelRequest, type ModelTurn, type UnreportedSpend, type Usage } from "./model-client.js";
import { pricedUsage, type Pricing } from "./pricing.js";
import { attemptBound, SpendLimitError, spendLeftAfter, unreportedOf, withinSpend, type SpendInput } from "./spend.js";
import type { JudgeCallLog } from "./judge-call-log.js";

/**
 * The model calls a guardrail makes through `ctx.budgeted(client)` (an LLM judge): they are the run's
 * spending like its own replies. Each call's usage counts in the run's `usage` once the guardrail
 * step has decided, whatever it decided, priced with the run's `config.pricing`. With a budget
 * (`maxBudgetTokens`, `maxBudgetCost`) each call is capped by what the run may still spend after the
 * step's earlier calls (`withinSpend`: a call whose prompt alone would cross a budget is not made,
 * it throws a `SpendLimitError`), and the step's calls take turns, so that guardrails checking side
 * by side never spend the same remainder twice. With a tool journal, each such call is recorded
 * before it is made (actors/judge-call-log.ts), and the step run again by a restored run counts the
 * calls an earlier process began in it.
 */

/** What a guardrail step's budgeted calls spent: the run adds it to its usage and to what it counts beyond it. */
export interface GuardrailSpend {
  usage: Usage;
  /** Calls that failed without reporting usage, or were still running when the step decided: their prompt and cap. */
  unreported?: UnreportedSpend;
}

/** What the machine tells the guardrail step about money (plain JSON: it is persisted). */
export interface GuardrailMoney {
  /** What the run may still spend; absent without budgets. */
  spend?: SpendInput;
  /** `config.pricing`: each call's usage is priced with it. */
  pricing?: Pricing;
  /** Parallel input guardrails run beside the round's model call, which may spend all that is left. */
  besideModelCall?: boolean;
}

const NOTHING: Usage = { promptTokens: 0, completionTokens: 0, totalTokens: 0 };

export class GuardrailSpending implements UnreportedSpend {
  private usage: Usage = NOTHING;
  private readonly unreported = { tokens: 0, cost: 0 };
  /** The bound of the budgeted call under way (its prompt and its cap), while one is. */
  private running: UnreportedSpend | undefined;
  private turns: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly money: GuardrailMoney = {},
    /** Where the budgeted calls are recorded before they are made (with a budget and a tool journal). */
    private readonly log?: JudgeCallLog,
  ) {}

  /**
   * The judge calls an earlier process of the run began in this step (a run restored from a checkpoint
   * before it) count first, each at its bound (it may have been billed for them): the step's own calls
   * get what is left.
   */
  async countEarlierCalls(): Promise<void> {
    if (this.log) this.addUnreported(await this.log.earlier());
  }

  /** `inner`, with every call counted (and, with a budget, kept within it). */
  client(inner: ModelClient): ModelClient {
    return { description: inner.description, ...(inner.model !== undefined ? { model: inner.model } : {}), complete: (request, options) => this.call(inner, request, options) };
  }

  /**
   * `total()` as one figure: what a run that ends while the step runs counts for it (the step is
   * metered with its actor, actors/step-host.ts), since its verdict, and the spending with it, never come.
   */
  get tokens(): number {
    const spent = this.total();
    return spent ? spent.usage.totalTokens + (spent.unreported?.tokens ?? 0) : 0;
  }

  get cost(): number {
    const spent = this.total();
    return spent ? (spent.usage.cost ?? 0) + (spent.unreported?.cost ?? 0) : 0;
  }

  /** What the step's calls spent so far, a call still under way counted at its bound; undefined when nothing was. */
  total(): GuardrailSpend | undefined {
    const tokens = this.unreported.tokens + (this.running?.tokens ?? 0);
    const cost = this.unreported.cost + (this.running?.cost ?? 0);
    if (this.usage.totalTokens === 0 && this.usage.cost === undefined && tokens === 0) return undefined;
    return { usage: this.usage, ...(tokens > 0 ? { unreported: { tokens, cost } } : {}) };
  }

  private call(inner: ModelClient, request: ModelRequest, options: ModelCallOptions | undefined): Promise<ModelTurn> {
    if (!this.money.spend) return this.counted(inner, request, options, undefined);
    const spend = this.money.spend;
    const turn = this.turns.then(async () => {
      const within = this.within(request, spend);
      await this.log?.begin(within.bound);
      return this.counted(inner, within.request, options, within.bound);
    });
    this.turns = turn.catch(() => undefined);
    return turn;
  }

  /** The request capped by what is left after this step's calls so far, and the most it may cost. */
  private within(request: ModelRequest, spend: SpendInput): { request: ModelRequest; bound: UnreportedSpend } {
    if (this.money.besideModelCall) {
      throw new SpendLimitError(
        spend.tokens !== undefined ? "tokenBudget" : "costBudget",
        "not calling the model: a parallel input guardrail runs beside the round's model call, which may spend all the run has left; make the guardrail blocking (mode: \"blocking\") to call a model within config.maxBudgetTokens / config.maxBudgetCost",
      );
    }
    const left = spendLeftAfter(spend, { tokens: this.usage.totalTokens + this.unreported.tokens, cost: (this.usage.cost ?? 0) + this.unreported.cost });
    const { request: capped, limit } = withinSpend(request, left);
    return { request: capped, bound: attemptBound(limit.promptTokens, capped.maxTokens, this.money.pricing, capped.model) };
  }

  private async counted(inner: ModelClient, request: ModelRequest, options: ModelCallOptions | undefined, bound: UnreportedSpend | undefined): Promise<ModelTurn> {
    this.running = bound;
    try {
      let turn = await inner.complete(request, options);
      // A custom client's counts must not corrupt the run's usage or its budget (as in the LLM step).
      if (!isSaneUsage(turn.usage)) turn = { ...turn, usage: saneUsage(turn.usage), usageMissing: true };
      this.usage = addUsage(this.usage, pricedUsage(turn.usage, this.money.pricing, turn.model || request.model, turn.serverModel));
      this.addUnreported(turn.unreported);
      return turn;
    } catch (error) {
      this.addUnreported(unreportedOf(error));
      throw error;
    } finally {
      this.running = undefined;
    }
  }

  private addUnreported(spend: UnreportedSpend | undefined): void {
    if (!spend) return;
    this.unreported.tokens += spend.tokens;
    this.unreported.cost += spend.cost;
  }
}
