import type { AgentContext } from "./context.js";

/** A call waiting for a person, as an approver needs it. */
export interface PendingApproval {
  callId: string;
  name: string;
  /** The model's arguments, raw JSON. */
  arguments: string;
  reason?: string;
  /** Epoch ms after which the call times out, when its guard set a timeout. */
  deadline?: number;
}

/**
 * The calls an agent is waiting on, read from a snapshot alone. Works where the telemetry events
 * are out of reach: a restored run (its `guard.approval.requested` was emitted in another process)
 * or an agent invoked by your own machine (read the child's snapshot in `onSnapshot`).
 */
export function pendingApprovals(snapshot: { context: AgentContext }): PendingApproval[] {
  return snapshot.context.loop.decisions
    .filter((d) => d.status === "pending")
    .map((d) => ({
      callId: d.callId,
      name: d.name,
      arguments: d.arguments ?? "",
      ...(d.reason !== undefined ? { reason: d.reason } : {}),
      ...(d.deadline !== undefined ? { deadline: d.deadline } : {}),
    }));
}

/** What an `onApproval` callback answers. */
export type ApprovalAnswer =
  | { approve: true; /** Edited arguments, validated against the tool's schema. */ args?: Record<string, unknown> | string }
  | { approve: false; reason?: string };
