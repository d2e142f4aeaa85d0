import type { ApprovalAnswer, ApprovalRequest, PendingApproval } from "./contract/approvals.js";
import type { AgentPath, ApproveEvent, RejectEvent } from "./contract/events.js";
import type { ReactAgentRef } from "./react-machine.js";

/** Answers refused this many times end with the call rejected, the last refusal as the reason the model reads. */
export const MAX_REFUSED_ANSWERS = 3;

export type Approver = (request: ApprovalRequest) => ApprovalAnswer | Promise<ApprovalAnswer>;

/** One call, wherever it sits: a nested agent's call ids are only unique along its path. */
const keyOf = (callId: string, agentPath: AgentPath | undefined) => `${JSON.stringify(agentPath ?? [])}|${callId}`;

/**
 * Puts `onApproval` in front of an agent's waiting calls: each request is asked, its answer sent.
 * An answer the agent refuses (edited arguments that do not fit the tool, ...) is asked again with
 * the refusal's reason while the call still waits; after `MAX_REFUSED_ANSWERS` refusals the call is
 * rejected with that reason, so a run never waits on an answer nobody will give again.
 */
export function createApprover(actor: ReactAgentRef, onApproval: Approver, waiting: (request: PendingApproval) => boolean): { ask(request: PendingApproval): void } {
  // Calls asked about and not yet decided (a restored run announces its waiting calls again: asked once).
  const asking = new Set<string>();
  // Answers sent and not yet decided or refused, by call.
  const sent = new Map<string, { request: PendingApproval; refusals: number }>();
  const send = (event: ApproveEvent | RejectEvent) => {
    if (actor.getSnapshot().status === "active") actor.send(event);
  };
  const pathOf = (request: PendingApproval) => (request.agentPath ? { agentPath: request.agentPath } : {});
  const reject = (request: PendingApproval, reason: string) => send({ type: "guard.reject", callId: request.callId, ...pathOf(request), reason });

  const ask = (request: PendingApproval, refusals: number, refusal?: string): void => {
    Promise.resolve()
      .then(() => onApproval(refusal !== undefined ? { ...request, refusal } : request))
      .then(
        (answer) => {
          sent.set(keyOf(request.callId, request.agentPath), { request, refusals });
          send(
            answer.approve
              ? { type: "guard.approve", callId: request.callId, ...pathOf(request), ...(answer.args !== undefined ? { args: answer.args } : {}) }
              : { type: "guard.reject", callId: request.callId, ...pathOf(request), ...(answer.reason !== undefined ? { reason: answer.reason } : {}) },
          );
        },
        (error: unknown) => reject(request, `the approver failed: ${error instanceof Error ? error.message : String(error)}`),
      );
  };

  actor.on("guard.approval.decided", (event) => {
    const key = keyOf(event.callId, event.agentPath);
    sent.delete(key);
    asking.delete(key);
  });
  actor.on("guard.approval.refused", (event) => {
    const key = keyOf(event.callId, event.agentPath);
    const answered = sent.get(key);
    if (!answered) return;
    sent.delete(key);
    // Decided meanwhile (a deadline passed): there is nothing left to ask about.
    if (!waiting(answered.request)) return void asking.delete(key);
    const refusals = answered.refusals + 1;
    if (refusals >= MAX_REFUSED_ANSWERS) reject(answered.request, event.reason);
    else ask(answered.request, refusals, event.reason);
  });
  return {
    ask(call) {
      const key = keyOf(call.callId, call.agentPath);
      if (asking.has(key)) return;
      asking.add(key);
      // The shape pendingApprovals() gives, whether the call came from an event or from a snapshot.
      const { callId, name, arguments: args, reason, deadline, agentPath } = call;
      ask({ callId, name, arguments: args, ...(reason !== undefined ? { reason } : {}), ...(deadline !== undefined ? { deadline } : {}), ...(agentPath ? { agentPath } : {}) }, 0);
    },
  };
}
