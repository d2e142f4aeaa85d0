import { z } from "zod";

/**
 * Token counts of one model call, or summed over a run. Saved in the state and the run's output.
 * The two details are optional: only some servers report them, and snapshots saved before they
 * existed must still restore.
 */
export const UsageSchema = z.object({
  promptTokens: z.number().int().min(0),
  completionTokens: z.number().int().min(0),
  totalTokens: z.number().int().min(0),
  /** Of `completionTokens`, those the model spent reasoning (OpenAI's `reasoning_tokens`). */
  reasoningTokens: z.number().int().min(0).optional(),
  /** Of `promptTokens`, those served from the provider's prompt cache (OpenAI's `cached_tokens`). */
  cachedPromptTokens: z.number().int().min(0).optional(),
  /**
   * What the tokens cost, in the currency units of `config.pricing` (actors/pricing.ts). Absent when no
   * pricing is configured; `null` when a call's model has no price there (never a guess), and then the
   * sum with it is `null` too.
   */
  cost: z.number().min(0).nullable().optional(),
});
export type Usage = z.infer<typeof UsageSchema>;

/** The optional counts of `Usage`, in one list so that checking, cleaning and adding cover each. */
export const USAGE_DETAILS = ["reasoningTokens", "cachedPromptTokens"] as const satisfies readonly (keyof Usage)[];
