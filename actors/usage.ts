import { z } from "zod";

/** Token counts of one model call, or summed over a run. Saved in the state and the run's output. */
export const UsageSchema = z.object({
  promptTokens: z.number().int().min(0),
  completionTokens: z.number().int().min(0),
  totalTokens: z.number().int().min(0),
});
export type Usage = z.infer<typeof UsageSchema>;
