import { fromCallback, type AnyActorRef, type AnyActorScope, type AnyStateMachine, type EventObject } from "xstate";
import { pendingApprovals, type PendingApproval } from "../contract/approvals.js";
import { momentOf, type AgentSnapshotLike } from "../contract/moment.js";
import type { AgentEmitted, NestedAgentEvent } from "../contract/events.js";

/**
 * An agent machine as the logic of a nested agent. It is the machine itself (same chart, same
 * implementations: the inspector shows it, XState persists and restores it inside its parent's
 * snapshot) except that, whenever its actor starts (freshly spawned, or restored in another
 * process), it starts telling its parent:
 * - `agent.emitted`: each telemetry event it emits (emitted events reach only `actor.on`
 *   listeners, never a parent machine, so they are passed on explicitly);
 * - `agent.status`: the calls it waits on and its last checkpoint moment, whenever they change.
 * The parent adds its own level to the path (see delegation.ts). A nested agent's own nested agent
 * tells it in the same way, so everything travels up one level at a time.
 */
export function nestedAgentLogic<M extends AnyStateMachine>(machine: M): M {
  const logic = Object.create(machine) as M;
  Object.defineProperty(logic, "start", {
    value(snapshot: Parameters<M["start"]>[0], scope: AnyActorScope) {
      reportToParent(scope);
      return machine.start(snapshot);
    },
  });
  return logic;
}

/**
 * XState's public way for an actor to reach its parent is `sendBack`, which only a callback actor's
 * start hands out. A callback logic started with this actor's own scope hands it out for this actor
 * (sending to no one when it has no parent), instead of reading the parent from XState's internals.
 */
function sendBackOf(scope: AnyActorScope): (event: NestedAgentEvent) => void {
  let sendBack: ((event: NestedAgentEvent) => void) | undefined;
  const relay = fromCallback<EventObject>(({ sendBack: send }) => {
    sendBack = send;
  });
  relay.start?.(relay.getInitialSnapshot(scope as never, undefined), scope as never);
  return (event) => sendBack?.(event);
}

function reportToParent(scope: AnyActorScope): void {
  const self: AnyActorRef = scope.self;
  const send = sendBackOf(scope);
  self.on("*", (event) => send({ type: "agent.emitted", from: self.id, event: event as AgentEmitted }));
  let last = "";
  let moment: string | null = null;
  self.subscribe({
    next: (snapshot) => {
      const agent = snapshot as unknown as AgentSnapshotLike;
      const pending: PendingApproval[] = agent.status === "active" ? pendingApprovals(agent) : [];
      moment = momentOf(agent) ?? moment;
      const key = JSON.stringify([pending, moment]);
      if (key === last) return;
      last = key;
      send({ type: "agent.status", from: self.id, pending, moment });
    },
    // The parent learns of a crash from XState's own error event.
    error: () => undefined,
  });
}
