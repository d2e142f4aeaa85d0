import { createEmptyActor, type ActorLogic, type AnyActorRef, type AnyActorScope, type AnyEventObject, type AnyTransitionDefinition, type SnapshotFrom } from "xstate";
import type { AgentInput } from "../machines/contract/context.js";
import type { ReactMachine } from "../machines/react-machine.js";

/**
 * Pure stepping of an agent machine: `machine.transition` with an actor scope whose executor
 * does nothing, so invoked actors are created (their input is computed and readable) but never
 * started. Every microstep the machine takes is recorded through the scope's inspection
 * channel, with the transition definitions it took: that is what coverage is counted from.
 */

export type AgentSnapshot = SnapshotFrom<ReactMachine>;

/** One microstep: the event being processed, the snapshot after it, the transitions taken. */
export interface Microstep {
  readonly event: AnyEventObject;
  readonly snapshot: AgentSnapshot;
  readonly transitions: readonly AnyTransitionDefinition[];
}

export interface PureStep {
  readonly snapshot: AgentSnapshot;
  readonly microsteps: readonly Microstep[];
}

/** The invoked children of a snapshot, by id, with the logic name (`src`) they were invoked from. */
export function childrenOf(snapshot: AgentSnapshot): { id: string; src: string; ref: AnyActorRef }[] {
  const children = snapshot.children as Record<string, AnyActorRef | undefined>;
  return Object.entries(children).flatMap(([id, ref]) => (ref && typeof ref.src === "string" ? [{ id, src: ref.src, ref }] : []));
}

/** The input a (not started) child was created with. */
export function childInput<T>(ref: AnyActorRef): T | undefined {
  const snapshot = ref.getSnapshot() as { input?: unknown } | undefined;
  return snapshot?.input as T | undefined;
}

export class PureStepper {
  private readonly scope: AnyActorScope;
  private sink: Microstep[] | undefined;

  constructor(readonly machine: ReactMachine) {
    const self = createEmptyActor();
    // The transition functions report each microstep to the system's inspectors.
    self.system.inspect((event) => {
      if (event.type !== "@xstate.microstep" || !this.sink) return;
      this.sink.push({ event: event.event, snapshot: event.snapshot as AgentSnapshot, transitions: event._transitions });
    });
    this.scope = {
      self,
      id: "model-based",
      sessionId: self.sessionId,
      logger: () => undefined,
      defer: () => undefined,
      emit: () => undefined,
      system: self.system,
      stopChild: () => undefined,
      actionExecutor: () => undefined,
    };
  }

  initial(input: AgentInput): PureStep {
    return this.record(() => this.machine.getInitialSnapshot(this.scope, input));
  }

  step(snapshot: AgentSnapshot, event: AnyEventObject): PureStep {
    return this.record(() => this.machine.transition(snapshot, event as Parameters<ReactMachine["transition"]>[1], this.scope));
  }

  /** The machine as plain actor logic for `xstate/graph` (which then cannot refuse its invokes). */
  logic(input: AgentInput): ActorLogic<AgentSnapshot, AnyEventObject, AgentInput> {
    const initial = this.initial(input).snapshot;
    return {
      transition: (snapshot, event) => this.step(snapshot, event).snapshot,
      getInitialSnapshot: () => initial,
      getPersistedSnapshot: (snapshot) => snapshot,
    };
  }

  private record(run: () => AgentSnapshot): PureStep {
    const microsteps: Microstep[] = [];
    this.sink = microsteps;
    try {
      const snapshot = run();
      if (snapshot.status === "error") throw new Error(`the machine crashed while stepping purely: ${String(snapshot.error)}`);
      return { snapshot, microsteps };
    } finally {
      this.sink = undefined;
    }
  }
}
