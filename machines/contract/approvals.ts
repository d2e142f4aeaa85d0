import { z } from "zod";
import type { AgentContext } from "./context.js";
import { AgentPathSchema } from "./commands.js";

/** A call waiting for a person, as an approver needs it. */
export const PendingApprovalSchema = z.object({
  callId: z.string(),
  name: z.string(),
  /** The model's arguments, raw JSON. */
  arguments: z.string(),
  reason: z.string().optional(),
  /** Epoch ms after which the call times out, when its guard set a timeout. */
  deadline: z.number().optional(),
  /** Set when a nested agent (an agentTool or a handoff target) waits on the call: where it sits. Send it back with the decision. */
  agentPath: AgentPathSchema.optional(),
});
export type PendingApproval = z.infer<typeof PendingApprovalSchema>;

/**
 * The calls an agent is waiting on, read from a snapshot alone: its own, then those of the nested
 * agent it runs (marked with their `agentPath`). Works where the telemetry events are out of reach:
 * a restored run (its `guard.approval.requested` was emitted in another process) or an agent
 * invoked by your own machine (read the child's snapshot in `onSnapshot`). A run that has ended (a
 * cancelled one included) waits on nothing, whatever calls it was waiting on when it stopped.
 */
export function pendingApprovals(snapshot: { context: AgentContext }): PendingApproval[] {
  if (snapshot.context.loop.termination) return [];
  const own = snapshot.context.loop.decisions
    .filter((d) => d.status === "pending")
    .map((d) => ({
      callId: d.callId,
      name: d.name,
      arguments: d.arguments ?? "",
      ...(d.reason !== undefined ? { reason: d.reason } : {}),
      ...(d.deadline !== undefined ? { deadline: d.deadline } : {}),
    }));
  const nested = snapshot.context.loop.delegation?.pending ?? [];
  return nested.length > 0 ? [...own, ...nested] : own;
}

/** Pending approvals read from a saved snapshot's context (no machine needed), nested agents' calls included. */
export function pendingFromSnapshot(snapshot: Record<string, unknown>): PendingApproval[] {
  const loop = (snapshot.context as { loop?: { decisions?: unknown } } | undefined)?.loop;
  if (!Array.isArray(loop?.decisions)) return [];
  return pendingApprovals(snapshot as unknown as { context: AgentContext });
}

/**
 * What `runAgent`'s `onApproval` is asked with: the waiting call and, when its previous answer was
 * refused (edited arguments that do not fit the tool, ...), why.
 */
export const ApprovalRequestSchema = PendingApprovalSchema.extend({
  /** Why your previous answer for this call was refused; answer again (after 3 refusals the call is rejected with it). */
  refusal: z.string().optional(),
});
export type ApprovalRequest = z.infer<typeof ApprovalRequestSchema>;

/** What an `onApproval` callback answers. */
export type ApprovalAnswer =
  | { approve: true; /** Edited arguments, validated against the tool's schema. */ args?: Record<string, unknown> | string }
  | { approve: false; reason?: string };
