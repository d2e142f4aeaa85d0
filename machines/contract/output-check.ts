import { z } from "zod";

/**
 * What `CheckOutput` found, kept in `loop.output` (JSON, checkpointed). Only the raw text is kept, not the
 * parsed value: the run's output parses it again (the check is pure), and text under `raw` is what
 * recordings and the inspector know to leave out.
 */
export const OutputCheckSchema = z.discriminatedUnion("status", [
  z.object({ status: z.literal("valid"), raw: z.string() }),
  z.object({ status: z.literal("invalid"), raw: z.string(), error: z.string() }),
]);
export type OutputCheck = z.infer<typeof OutputCheckSchema>;
