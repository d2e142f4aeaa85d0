import type { ActionFunction, GuardArgs, NonReducibleUnknown, ParameterizedObject, ProvidedActor } from "xstate";
import type { AgentContext } from "../contract/context.js";
import type { AgentEmitted, AgentEvent } from "../contract/events.js";
import type { AgentSetup } from "./agent-setup.js";
import type { StepName } from "./steps.js";

/**
 * The piece interface. The agent's chart is made of pieces, one per feature that adds states (the
 * loop, tool execution, approvals, nested agents, structured output, compaction, round preparation).
 * A piece is one module, `*-piece.ts`, that exports:
 *
 * - its implementations, `xxxImplementation(build)`: `{ actors?, actions?, guards? }`, the named
 *   parts it registers in the machine's `setup()` (agent-setup.ts spreads every piece's in). Actions
 *   and guards are made with `defineActions` / `defineGuards`, typed to the agent's context and events;
 *   their names are the chart's vocabulary, shared by every piece.
 * - its states, `xxxStates(build, exits)`: state configs made with `stateConfig`, which types them
 *   against the whole setup (action, guard and actor names are checked where they are written, and an
 *   invoked actor's `onDone` knows its output). A piece whose states exist only with an option returns
 *   `when(present, { ... })`, so an agent without the option has none of them.
 * - what it adds to other pieces' states ("hooks"), as values typed here (`AgentOn`, `Branch`,
 *   `DoneBranch`), which createReactMachine hands to the state that takes them: the approval state
 *   takes the nested agents' way back, the model call the final-result branch.
 *
 * A piece never decides where it sits: the states it leads to come in as arguments (its exits), and
 * createReactMachine, which reads as the chart, puts the pieces in order. The pure context updates
 * behind a piece's actions sit beside it (transitions.ts, output.ts, delegation.ts, prepare-round.ts),
 * testable without a machine.
 */

type Params = ParameterizedObject["params"] | undefined;

/** A named action of the agent's chart (`params` as the chart passes them; most take none). */
export type AgentAction<P extends Params = NonReducibleUnknown> = ActionFunction<
  AgentContext,
  AgentEvent,
  AgentEvent,
  P,
  never,
  never,
  never,
  never,
  AgentEmitted
>;

/** A named guard of the agent's chart. */
export type AgentGuard<P extends Params = unknown> = (args: GuardArgs<AgentContext, AgentEvent>, params: P) => boolean;

/**
 * What `assign`, `emit` and `enqueueActions` are typed as in a piece: inferred outside `setup()`,
 * the actors, actions and delays an action may name widen to any at all.
 */
type PieceAction<P extends Params> = ActionFunction<AgentContext, AgentEvent, AgentEvent, P, ProvidedActor, ParameterizedObject, ParameterizedObject, string, AgentEmitted>;

/**
 * A piece's named actions, typed as `setup({ actions })` types them: `assign`, `emit` and
 * `enqueueActions` inside get the agent's context, events and emitted events, and each action keeps
 * the params it declares, so the machine's action types are what they would be written inline.
 * The actions name no actor, action or delay by type (a nested agent is spawned by its logic's name):
 * only those phantom types are narrowed here, to fit every piece's setup.
 */
export function defineActions<P extends Record<string, Params>>(actions: { [K in keyof P]: PieceAction<P[K]> }): { [K in keyof P]: AgentAction<P[K]> } {
  return actions as unknown as { [K in keyof P]: AgentAction<P[K]> };
}

/** A piece's named guards, typed as `setup({ guards })` types them. */
export function defineGuards<P extends Record<string, Params>>(guards: { [K in keyof P]: AgentGuard<P[K]> }): { [K in keyof P]: AgentGuard<P[K]> } {
  return guards;
}

/** A state of the agent's chart, typed against the whole setup: every piece's actors, actions and guards. */
export type AgentStateConfig = Parameters<AgentSetup["createStateConfig"]>[0];

/**
 * A state as a piece hands it over: its config, checked, under a short type. Only the state's own
 * children (`states`) shape the chart's inferred state value and schema, and a piece's state brings
 * none (createReactMachine nests them), so the config's full type, which would spell out every inline
 * function's argument types, is not carried along.
 */
export type PieceState = Omit<AgentStateConfig, "id" | "states">;

/** A piece's state config, checked against the whole setup where the piece writes it. */
export function stateConfig<const T extends AgentStateConfig>(config: T): PieceState {
  return config;
}

/** Transitions by event, that a piece adds to another piece's state. */
export type AgentOn = NonNullable<AgentStateConfig["on"]>;

type Single<T> = T extends readonly (infer E)[] ? E : T;

/** One eventless (`always`) or event transition that a piece adds to another piece's state. */
export type Branch = Exclude<Single<NonNullable<AgentStateConfig["always"]>>, string>;

type Invoke = Single<NonNullable<AgentStateConfig["invoke"]>>;

/** One invoked actor that a piece adds to another piece's state (or the root). */
export type AgentInvoke = Invoke;

/** One transition on the output of the step `step` (the step host's `<step>.done`), that a piece adds to the state waiting on it. */
export type DoneBranch<Step extends StepName> = Exclude<Single<NonNullable<AgentOn[`${Step}.done`]>>, string>;

/**
 * States that exist only with their option (`output`, `config.context`, `prepareRound`...): an agent
 * without it has none of them, so nothing unreachable shows in its chart or its model-based coverage.
 * Typed as present, so the chart's state values name them.
 */
export function when<const T extends object>(present: boolean, states: T): T {
  return present ? states : ({} as T);
}
