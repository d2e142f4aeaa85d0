import type { AnyActorRef } from "xstate";

/**
 * Agents whose telemetry nobody can hear. `runAgent` creates its actor and keeps it to itself: when it
 * attaches no listener (no `onEvent`, `onApproval` or `tracer`) and hands the actor to no inspector,
 * no one can ever call `actor.on` on it, so every emitted event would go nowhere. It marks such an
 * actor here, and the chart's per-round telemetry actions build no event for it: each would cost an
 * event object, an XState action and a deferred call, about a tenth of jianmu's cost per model call
 * over the raw SDK (bench/README.md). An actor made with `createActor` anywhere else is never marked,
 * so whoever holds one may listen at any time, as before.
 *
 * Only identity is kept (a WeakSet of the actors `runAgent` made), read through the `self` XState
 * hands every action: no private field of XState is read.
 */
const unheard = new WeakSet<object>();

/** `runAgent`'s actor that no one can listen to: its telemetry is not built. */
export function markUnheard(actor: AnyActorRef): void {
  unheard.add(actor);
}

/** Whether an emitted event of this agent can reach anyone (true unless `runAgent` marked it). */
export function heard(self: AnyActorRef): boolean {
  return !unheard.has(self);
}
