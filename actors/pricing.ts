import { z } from "zod";
import type { Usage } from "./usage.js";

/**
 * What tokens cost, per model, in currency units (whatever the user's are: dollars, yuan...) per
 * million tokens, as providers list their prices. `cachedInput` prices the prompt tokens the
 * provider served from its cache (`usage.cachedPromptTokens`); without it they cost `input`.
 * Reasoning tokens are output tokens (they are part of `completionTokens`) and cost `output`.
 */
export const ModelPriceSchema = z
  .object({
    input: z.number().min(0),
    output: z.number().min(0),
    cachedInput: z.number().min(0).optional(),
  })
  .strict();
export type ModelPrice = z.infer<typeof ModelPriceSchema>;

/** Prices by model name, as the model is named in requests (`config.model`, a fallback's `model`) or by the server. */
export const PricingSchema = z.record(z.string().min(1), ModelPriceSchema);
export type Pricing = z.infer<typeof PricingSchema>;

const PER_TOKEN = 1 / 1_000_000;

/**
 * The price of a model: by the name the call used, else by the name the server reported (often a
 * dated snapshot of the alias). Undefined when the pricing names neither: such a call's cost is not
 * known, and never guessed.
 */
export function priceOf(pricing: Pricing | undefined, model: string | undefined, serverModel?: string): ModelPrice | undefined {
  if (!pricing) return undefined;
  if (model !== undefined && Object.hasOwn(pricing, model)) return pricing[model];
  if (serverModel !== undefined && Object.hasOwn(pricing, serverModel)) return pricing[serverModel];
  return undefined;
}

/** The cost of one call's tokens at `price` (cached prompt tokens at `cachedInput`, when the price has one). */
export function costAt(price: ModelPrice, usage: Usage): number {
  const cached = Math.min(usage.cachedPromptTokens ?? 0, usage.promptTokens);
  const uncached = usage.promptTokens - cached;
  return (uncached * price.input + cached * (price.cachedInput ?? price.input) + usage.completionTokens * price.output) * PER_TOKEN;
}

/** One call's usage with its cost: `null` when the model has no price; unchanged when there is no pricing at all. */
export function pricedUsage(usage: Usage, pricing: Pricing | undefined, model: string | undefined, serverModel?: string): Usage {
  if (!pricing) return usage;
  const price = priceOf(pricing, model, serverModel);
  return { ...usage, cost: price ? costAt(price, usage) : null };
}

/**
 * The most completion tokens `cost` buys at `price` after a prompt of `promptTokens` (uncached: the
 * dearest case); negative when the prompt alone costs more. Counted in millionths of a unit, with a
 * billionth of the amount held back, so that summing the calls' costs in floating point cannot land a
 * rounding error above the budget.
 */
export function completionTokensFor(price: ModelPrice, cost: number, promptTokens: number): number {
  const left = cost * (1 - 1e-9) * 1_000_000 - promptTokens * price.input;
  if (left < 0) return -1;
  if (price.output === 0) return Number.MAX_SAFE_INTEGER;
  let tokens = Math.floor(left / price.output);
  while (tokens > 0 && tokens * price.output > left) tokens--;
  return tokens;
}

/** A cost for people to read: four significant digits (a call may cost a millionth of a unit). */
export function formatCost(cost: number): string {
  return cost === 0 ? "0" : Number(cost.toPrecision(4)).toString();
}
