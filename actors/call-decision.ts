import { z } from "zod";

/*
 * What the guard preflight leaves in machine context, and so in every saved snapshot: the decisions
 * on the current batch of calls and the calls already run. Each shape is written once, as the zod
 * schema that checks it when a snapshot is restored; the types are `z.infer` of it, so a new
 * decision status is known to the restore check the moment it compiles.
 */

/** Where a call of the current batch stands, in the order a call goes through them. */
export const CALL_DECISION_STATUSES = ["allowed", "denied", "pending", "approved", "rejected"] as const;

/** What happens to a pending call whose approval deadline passes. */
export const APPROVAL_TIMEOUT_ACTIONS = ["reject", "fail"] as const;

/** Where a call of the current batch stands. JSON-safe: it lives in machine context. */
export const CallDecisionSchema = z.object({
  callId: z.string(),
  name: z.string(),
  /** The model's arguments (raw JSON), kept so an approver can see them from a snapshot alone. */
  arguments: z.string().optional(),
  status: z.enum(CALL_DECISION_STATUSES),
  reason: z.string().optional(),
  /** Arguments edited by the approver (raw JSON), used instead of the model's. */
  editedArguments: z.string().optional(),
  /** Epoch milliseconds after which a pending call times out. */
  deadline: z.number().optional(),
  onTimeout: z.enum(APPROVAL_TIMEOUT_ACTIONS).optional(),
});
export type CallDecision = z.infer<typeof CallDecisionSchema>;

/** One tool call that already ran in this run; guards use it for budgets and rate limits. */
export const CallRecordSchema = z.object({
  callId: z.string(),
  name: z.string(),
  /** Epoch milliseconds when it started. */
  at: z.number(),
});
export type CallRecord = z.infer<typeof CallRecordSchema>;
