import { createEmptyActor, type ActorLogic, type AnyActorRef, type AnyActorScope, type AnyEventObject, type AnyTransitionDefinition, type SnapshotFrom } from "xstate";
import type { AgentInput } from "../machines/contract/context.js";
import type { ReactMachine } from "../machines/react-machine.js";

/**
 * Pure stepping of an agent machine: `machine.transition` with an actor scope whose executor
 * does nothing, so invoked actors are created (their input is computed and readable) but never
 * started, and the steps the machine asks its step host for (actors/step-host.ts) are noted, not
 * run: a snapshot waits on them as on its children (`awaitedBy`). Every microstep the machine
 * takes is recorded through the scope's inspection channel, with the transition definitions it
 * took (that is what coverage is counted from) and the steps it asked for.
 */

export type AgentSnapshot = SnapshotFrom<ReactMachine>;

/** A step the agent asked its step host for (actors/step-host.ts): AgentLLM's model call, Executing's batch. */
export interface AskedStep {
  /** The step's name in the host's protocol (`llm`, `toolExecutor`): it answers `<step>.done` / `<step>.error`. */
  readonly step: string;
  readonly input: unknown;
  /** The request event itself: one identity per request. */
  readonly event: AnyEventObject;
}

/** One microstep: the event being processed, the snapshot after it, the transitions taken, the steps it asked for. */
export interface Microstep {
  readonly event: AnyEventObject;
  readonly snapshot: AgentSnapshot;
  readonly transitions: readonly AnyTransitionDefinition[];
  readonly requests?: readonly AskedStep[];
}

/** Something a snapshot waits on: an invoked child, or a step asked of the step host. */
export interface Awaited {
  /** The child's id, or `<machine>.<step>` for a step. */
  readonly id: string;
  /** The logic it runs, by the name `machine.provide({ actors })` knows (`llm`, `toolExecutor`, `guard`...). */
  readonly src: string;
  readonly input: unknown;
  /** The event types of its outcome. */
  readonly done: string;
  readonly error: string;
  /** One identity per child or request. */
  readonly key: object;
  /** A step asked of the step host, not a child. */
  readonly hosted: boolean;
}

/** The steps each snapshot (made by a PureStepper) waits on, by step name. */
const pendingSteps = new WeakMap<object, ReadonlyMap<string, AskedStep>>();

/** The step request an executed action sends, if it is one (a `sendTo` the step host). */
function stepMessage(action: { type: string; params?: unknown }): AnyEventObject | undefined {
  if (action.type !== "xstate.sendTo") return undefined;
  const event = (action.params as { event?: AnyEventObject } | undefined)?.event;
  return event?.type === "step.request" || event?.type === "step.abort" ? event : undefined;
}

export interface PureStep {
  readonly snapshot: AgentSnapshot;
  readonly microsteps: readonly Microstep[];
}

/**
 * What a snapshot waits on: its invoked children (the step host aside) by id, with the logic name
 * (`src`) they were invoked from, and the steps it asked the host for (known for snapshots a
 * PureStepper made).
 */
export function awaitedBy(snapshot: AgentSnapshot): Awaited[] {
  const children = snapshot.children as Record<string, AnyActorRef | undefined>;
  const invoked = Object.entries(children).flatMap(([id, ref]) =>
    ref && typeof ref.src === "string" && ref.src !== "steps"
      ? [{ id, src: ref.src, input: childInput(ref), done: `xstate.done.actor.${id}`, error: `xstate.error.actor.${id}`, key: ref, hosted: false }]
      : [],
  );
  const steps = [...(pendingSteps.get(snapshot)?.values() ?? [])].map((request) => ({
    id: `${snapshot.machine.id}.${request.step}`,
    src: request.step,
    input: request.input,
    done: `${request.step}.done`,
    error: `${request.step}.error`,
    key: request.event,
    hosted: true,
  }));
  return [...invoked, ...steps];
}

/** The input a (not started) child was created with. */
export function childInput<T>(ref: AnyActorRef): T | undefined {
  const snapshot = ref.getSnapshot() as { input?: unknown } | undefined;
  return snapshot?.input as T | undefined;
}

export class PureStepper {
  private readonly scope: AnyActorScope;
  private sink: Microstep[] | undefined;
  /** While stepping: the steps asked for and not answered, and those asked for since the last microstep. */
  private pending = new Map<string, AskedStep>();
  private asked: AskedStep[] = [];

  constructor(readonly machine: ReactMachine) {
    const self = createEmptyActor();
    // The transition functions report each microstep to the system's inspectors.
    self.system.inspect((event) => {
      if (event.type !== "@xstate.microstep" || !this.sink) return;
      pendingSteps.set(event.snapshot, new Map(this.pending));
      this.sink.push({ event: event.event, snapshot: event.snapshot as AgentSnapshot, transitions: event._transitions, requests: this.asked });
      this.asked = [];
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
      // Nothing runs; a step asked of the host is noted (what the snapshot then waits on).
      actionExecutor: (action) => {
        const message = stepMessage(action);
        if (!message || typeof message["step"] !== "string") return;
        const step = message["step"];
        if (message.type === "step.abort") return void this.pending.delete(step);
        const request = { step, input: message["input"], event: message };
        this.pending.set(step, request);
        this.asked.push(request);
      },
    };
  }

  initial(input: AgentInput): PureStep {
    return this.record(new Map(), () => this.machine.getInitialSnapshot(this.scope, input));
  }

  step(snapshot: AgentSnapshot, event: AnyEventObject): PureStep {
    const pending = new Map(pendingSteps.get(snapshot));
    // The step's answer: the host runs it no longer.
    const answered = /^(\w+)\.(done|error)$/.exec(event.type)?.[1];
    if (answered !== undefined) pending.delete(answered);
    return this.record(pending, () => this.machine.transition(snapshot, event as Parameters<ReactMachine["transition"]>[1], this.scope));
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

  private record(pending: Map<string, AskedStep>, run: () => AgentSnapshot): PureStep {
    const microsteps: Microstep[] = [];
    this.sink = microsteps;
    this.pending = pending;
    this.asked = [];
    try {
      const snapshot = run();
      if (snapshot.status === "error") throw new Error(`the machine crashed while stepping purely: ${String(snapshot.error)}`);
      pendingSteps.set(snapshot, new Map(this.pending));
      return { snapshot, microsteps };
    } finally {
      this.sink = undefined;
    }
  }
}
