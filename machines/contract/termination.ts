import { z } from "zod";
import { ErrorInfoSchema, type ErrorInfo } from "../../actors/errors.js";

/*
 * Why a failed run ended. Kept in context (`loop.termination`), so saved snapshots hold it, and in
 * the run's output. Written once, as the schema that checks it on restore; `Termination` is its type.
 * (Its own file so the emitted events, machines/contract/events.ts, and the context can both use it.)
 */

import { TERMINATION_REASONS, type TerminationReason } from "./termination-reasons.js";

export { TERMINATION_REASONS, type TerminationReason } from "./termination-reasons.js";

export const TerminationSchema = z.object({
  reason: z.enum(TERMINATION_REASONS),
  /** Completed loop iterations when the run ended. */
  iterations: z.number().int().min(0),
  error: ErrorInfoSchema.optional(),
  /** Free text given with `agent.cancel`. */
  detail: z.string().optional(),
  /** `invalidOutput`: the model's last final output, as it wrote it (`error` says what is wrong with it). */
  raw: z.string().optional(),
  /** `guardrailTripped`: the guardrail's name (`detail` is its reason). */
  guardrail: z.string().optional(),
});
export type Termination = z.infer<typeof TerminationSchema>;

export function errorTermination(reason: TerminationReason, iterations: number, error?: ErrorInfo, detail?: string): Termination {
  return { reason, iterations, ...(error ? { error } : {}), ...(detail ? { detail } : {}) };
}
