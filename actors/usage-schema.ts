import { z } from "zod";

/**
 * Token counts of one model call, or summed over a run: the one definition behind the `Usage` type,
 * the `usage` field of the host state and of emitted events (`model.call.completed`, `reply.completed`,
 * `loop.terminated`, ...). It lives with the actors, which report usage first.
 */
export const UsageSchema = z.object({
  promptTokens: z.number().int().min(0),
  completionTokens: z.number().int().min(0),
  totalTokens: z.number().int().min(0),
});
