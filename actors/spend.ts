import type { FunctionSchema } from "../tools/toolset.js";
import { JianmuError } from "../tools/jianmu-error.js";
import type { Message } from "./messages.js";
import { ModelError, type ModelRequest, type UnreportedSpend } from "./model-client.js";
import { completionTokensFor, costAt, priceOf, type Pricing } from "./pricing.js";
import { promptTokens, tokenizerAvailable, tokensOf } from "./token-count.js";

/**
 * Budgets that hold: before a model call, what the run may still spend (tokens, cost) becomes the
 * call's `maxTokens`, after the prompt's estimated size; a call whose prompt alone would cross a
 * budget is not made. The machine works out what is left (machines/chart/spend.ts); this module turns
 * it into a cap for one call and each attempt of it.
 *
 * A cap is sent only when it binds: below the request's own `maxTokens`, or, without one, below
 * `OUTPUT_CAP_EVERY_MODEL_TAKES`. Servers refuse a `max_tokens` above the model's own output limit
 * (OpenAI answers 400 "max_tokens is too large"), which jianmu does not know; a run far from its
 * budget therefore sends what it always sent.
 */

/** Which budget refused a call: the run's termination reason. */
export type SpendBudget = "tokenBudget" | "costBudget";

/** The largest cap sent without the request's own `maxTokens`: every chat model accepts this many output tokens. */
export const OUTPUT_CAP_EVERY_MODEL_TAKES = 4096;

/** What a model call may still spend, as the machine hands it to the LLM step (plain JSON: it is persisted). */
export interface SpendInput {
  /** Tokens left of the token budget (prompt and completion, every attempt). */
  tokens?: number;
  /** Currency left of the cost budget. */
  cost?: number;
  /** How much the server counted past our estimates so far in this run (≥ 1): estimates are scaled by it. */
  promptScale?: number;
  /** The prices, with a cost budget: the cap depends on the model's. */
  pricing?: Pricing;
}

/** What a model client gets on the request: what is left, the prompt's estimated size, the prices, the request's own cap. */
export interface SpendLimit {
  tokens?: number;
  cost?: number;
  /** The prompt's estimated size in tokens, from above (see `estimatePromptTokens`). */
  promptTokens: number;
  pricing?: Pricing;
  /** The request's `maxTokens` before the budget capped it. */
  maxTokens?: number;
}

/** A call (or an attempt of it) that would cross a budget, so it is not made. */
export class SpendLimitError extends JianmuError {
  static override readonly errorCode = "SPEND_LIMIT";
  override name = "SpendLimitError";
  /** What earlier attempts of the refused call may have been billed (see `ModelTurn.unreported`). */
  unreported?: UnreportedSpend;
  constructor(
    readonly budget: SpendBudget,
    message: string,
  ) {
    super(message);
  }
}

/** What an attempt may ask for: its `maxTokens` (undefined: send none, the budget does not bind), or why it may not be made. */
export type Allowance = { maxTokens: number | undefined } | { refused: SpendLimitError };

/**
 * What an attempt of the call on `model` may ask for, after what earlier attempts of the call may
 * have spent. With a cost budget, a model without a price cannot be kept within it, so it is refused;
 * an unknown model (the client's default, not named in the request) is left to the client, which knows it.
 */
export function allowance(limit: SpendLimit, model: string | undefined, spent: { tokens: number; cost: number } = { tokens: 0, cost: 0 }): Allowance {
  let left = Number.MAX_SAFE_INTEGER;
  if (limit.tokens !== undefined) {
    left = limit.tokens - spent.tokens - limit.promptTokens;
    if (left < 1) {
      return refuse("tokenBudget", `the prompt (about ${limit.promptTokens} tokens) leaves no room for an answer in the ${Math.max(0, limit.tokens - spent.tokens)} tokens left of config.maxBudgetTokens`);
    }
  }
  if (limit.cost !== undefined && model !== undefined) {
    const price = priceOf(limit.pricing, model);
    if (!price) return refuse("costBudget", `model ${model} has no price in config.pricing, so a call to it cannot be kept within config.maxBudgetCost`);
    const affordable = completionTokensFor(price, limit.cost - spent.cost, limit.promptTokens);
    if (affordable < 1) {
      return refuse("costBudget", `the prompt (about ${limit.promptTokens} tokens on ${model}) leaves no room for an answer in the ${Math.max(0, limit.cost - spent.cost)} left of config.maxBudgetCost`);
    }
    left = Math.min(left, affordable);
  }
  const ceiling = limit.maxTokens ?? OUTPUT_CAP_EVERY_MODEL_TAKES;
  return { maxTokens: left < ceiling ? left : limit.maxTokens };
}

function refuse(budget: SpendBudget, why: string): Allowance {
  return { refused: new SpendLimitError(budget, `not calling the model: ${why}`) };
}

/** Whether the allowance is the request's own: the budget does not bind, so a rougher estimate would have done. */
const unbound = (allowed: Allowance, limit: SpendLimit) => !("refused" in allowed) && allowed.maxTokens === limit.maxTokens;

const toolTokens = new WeakMap<readonly FunctionSchema[], number>();

/**
 * The prompt's size in tokens, from above: gpt-tokenizer's o200k count of the messages (with the
 * chat format's framing) and of the tools' schemas as JSON (longer than the form OpenAI renders them
 * in), scaled by `scale`. Without gpt-tokenizer, the request's UTF-8 bytes. A model whose tokenizer
 * counts more than o200k is caught up with by `scale` after its first call (machines/chart/spend.ts).
 */
export function estimatePromptTokens(messages: readonly Message[], tools: readonly FunctionSchema[], scale = 1): number {
  if (!tokenizerAvailable()) return promptBytes(messages, tools);
  let overhead = toolTokens.get(tools);
  if (overhead === undefined) toolTokens.set(tools, (overhead = tools.length === 0 ? 0 : tokensOf(JSON.stringify(tools))));
  return Math.ceil(promptTokens(messages, overhead) * Math.max(1, scale));
}

/** The request's UTF-8 bytes as JSON: a byte-level tokenizer never makes more tokens than bytes, so this bounds any count. */
function promptBytes(messages: readonly Message[], tools: readonly FunctionSchema[]): number {
  return new TextEncoder().encode(JSON.stringify({ messages, tools })).length;
}

/**
 * The request as it may be sent within `spend`: its `maxTokens` capped for the requested model and
 * the limit attached for the client's attempts. `estimate` is the tokenizer's estimate of the prompt,
 * when one was needed: the bytes bound the prompt from above at no cost, and the tokenizer (slow to
 * load) is only asked when that rough bound would refuse the call or bind its cap. Throws a
 * `SpendLimitError` when the prompt alone would cross a budget: the call is not made.
 */
export function withinSpend(request: ModelRequest, spend: SpendInput): { request: ModelRequest; limit: SpendLimit; estimate?: number } {
  const base: Omit<SpendLimit, "promptTokens"> = {};
  if (spend.tokens !== undefined) base.tokens = spend.tokens;
  if (spend.cost !== undefined) base.cost = spend.cost;
  if (spend.pricing !== undefined) base.pricing = spend.pricing;
  if (request.maxTokens !== undefined) base.maxTokens = request.maxTokens;
  let limit: SpendLimit = { ...base, promptTokens: promptBytes(request.messages, request.tools) };
  let allowed = allowance(limit, request.model);
  let estimate: number | undefined;
  if (!unbound(allowed, limit) && tokenizerAvailable()) {
    estimate = estimatePromptTokens(request.messages, request.tools, spend.promptScale);
    limit = { ...base, promptTokens: estimate };
    allowed = allowance(limit, request.model);
  }
  if ("refused" in allowed) throw allowed.refused;
  const capped: ModelRequest = { ...request, spend: limit };
  if (allowed.maxTokens === undefined) delete capped.maxTokens;
  else capped.maxTokens = allowed.maxTokens;
  return estimate === undefined ? { request: capped, limit } : { request: capped, limit, estimate };
}

/**
 * A call made again for a run restored while it waited on its reply: the process that saved the run
 * may have made it already, and been billed for it without anyone hearing back. It counts as an
 * attempt that failed without a word does (its prompt and its cap, `AttemptBudget`; priced at its
 * model's price, when it has one), the same request then as now: what is left for the call made now
 * goes down by as much, and `lost` is reported beside its usage. A request the budget refuses now was
 * refused then too (the call was not made): this throws the same `SpendLimitError`, counting nothing.
 */
export function afterLostCall(request: ModelRequest, spend: SpendInput, clientModel: string | undefined): { spend: SpendInput; lost: UnreportedSpend } {
  // The prompt as the budget sized it (AttemptBudget's rule): the tokenizer's estimate when the budget is near, else the bytes.
  const { request: capped, limit } = withinSpend(request, spend);
  // A request that names no model goes to the client's own.
  const lost = attemptBound(limit.promptTokens, capped.maxTokens, spend.pricing, request.model ?? clientModel);
  return { spend: spendLeftAfter(spend, lost), lost };
}

/**
 * The most one attempt of a call may have been billed when no answer says what it cost: its prompt
 * (as the budget sized it) and its cap (without one, the cap every model takes: the budget did not
 * bind then), priced at `model`'s price when the pricing has one.
 */
export function attemptBound(promptTokens: number, cap: number | undefined, pricing: Pricing | undefined, model: string | undefined): UnreportedSpend {
  const completionTokens = cap ?? OUTPUT_CAP_EVERY_MODEL_TAKES;
  const usage = { promptTokens, completionTokens, totalTokens: promptTokens + completionTokens };
  const price = priceOf(pricing, model);
  return { tokens: usage.totalTokens, cost: price ? costAt(price, usage) : 0 };
}

/** What `spend` leaves after `spent` (never below nothing). */
export function spendLeftAfter(spend: SpendInput, spent: UnreportedSpend): SpendInput {
  const left: SpendInput = { ...spend };
  if (left.tokens !== undefined) left.tokens = Math.max(0, left.tokens - spent.tokens);
  if (left.cost !== undefined) left.cost = Math.max(0, left.cost - spent.cost);
  return left;
}

/** `extra` added to what a call's attempts may have been billed without reporting it. */
export function plusUnreported(unreported: UnreportedSpend | undefined, extra: UnreportedSpend): UnreportedSpend {
  return unreported ? { tokens: unreported.tokens + extra.tokens, cost: unreported.cost + extra.cost } : { ...extra };
}

/** A model client's refusal to cross a budget (`ModelError` of kind `budget`) as the `SpendLimitError` the machine ends on. */
export function asSpendError(error: unknown): unknown {
  if (!(error instanceof ModelError) || error.kind !== "budget") return error;
  const refusal = new SpendLimitError(error.code === "costBudget" ? "costBudget" : "tokenBudget", error.message);
  if (error.unreported) refusal.unreported = error.unreported;
  return refusal;
}

/** A failed call's error, with what a lost earlier call may have been billed on it (the machine counts it from there). */
export function withLost(error: unknown, lost: UnreportedSpend | undefined): unknown {
  if (lost && (error instanceof ModelError || error instanceof SpendLimitError)) error.unreported = plusUnreported(error.unreported, lost);
  return error;
}

/** What a failed call's attempts may have been billed without reporting it (its `ModelError` or `SpendLimitError` says), if anything. */
export function unreportedOf(error: unknown): UnreportedSpend | undefined {
  return error instanceof ModelError || error instanceof SpendLimitError ? error.unreported : undefined;
}

/** Which budget an actor's error says was reached (a `SpendLimitError`), if it is one. */
export function spendRefusal(error: unknown): SpendBudget | undefined {
  return error instanceof SpendLimitError ? error.budget : undefined;
}
