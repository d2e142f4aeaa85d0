import { z } from "zod";

/** Token counts of one model call, or summed over a run. Saved in the state and the run's output. */
export const UsageSchema = z.object({
  promptTokens: z.number().int().min(0),
  completionTokens: z.number().int().min(0),
  totalTokens: z.number().int().min(0),
  reasoningTokens: z.number().int().min(0).optional(),
  cachedPromptTokens: z.number().int().min(0).optional(),
  /**
   * What the tokens cost, in the currency units of `config.pricing` (actors/pricing.ts). Absent when no
   * pricing is configured; `null` when a call's model has no price there (never a guess), and then the
   * sum with it is `null` too.
   */
  cost: z.number().min(0).nullable().optional(),
});
export type Usage = z.infer<typeof UsageSchema>;

/** The optional breakdowns of a usage: parts of `completionTokens` (reasoning) and of `promptTokens` (cached). */
export const USAGE_DETAILS = ["reasoningTokens", "cachedPromptTokens"] as const;
