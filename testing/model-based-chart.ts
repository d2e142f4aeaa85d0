import type { AnyStateMachine, AnyStateNode, AnyTransitionDefinition } from "xstate";
import { getStateNodes } from "xstate/graph";

/**
 * What there is to cover, read from the machine definition itself: every state node below the
 * root, and every transition candidate (each entry of `on`, invoke `onDone`/`onError` and
 * `always`, guarded alternatives counted separately) of every node including the root. A state
 * or transition added to the machine later shows up here without anyone listing it.
 */

export interface ChartState {
  readonly id: string;
  readonly node: AnyStateNode;
}

export interface ChartTransition {
  /** Stable and unique: `<source id> <event>[<index>]`. */
  readonly key: string;
  /** For people: source, event, guard and targets. */
  readonly label: string;
  readonly definition: AnyTransitionDefinition;
}

export interface Chart {
  readonly states: readonly ChartState[];
  readonly transitions: readonly ChartTransition[];
  /** The chart transition a taken transition definition belongs to. */
  transitionOf(definition: AnyTransitionDefinition): ChartTransition | undefined;
}

function guardName(definition: AnyTransitionDefinition): string | undefined {
  const guard: unknown = definition.guard;
  if (guard === undefined) return undefined;
  if (typeof guard === "string") return guard;
  if (typeof guard === "object" && guard !== null && "type" in guard && typeof guard.type === "string") return guard.type;
  return "inline guard";
}

/** Short event names: `xstate.done.actor.ReActAgent.llm` reads as `done(llm)`. */
function eventName(machineId: string, eventType: string): string {
  for (const [prefix, short] of [
    ["xstate.done.actor.", "done"],
    ["xstate.error.actor.", "error"],
  ] as const) {
    if (eventType.startsWith(prefix)) {
      const id = eventType.slice(prefix.length);
      return `${short}(${id.startsWith(`${machineId}.`) ? id.slice(machineId.length + 1) : id})`;
    }
  }
  return eventType === "" ? "always" : eventType;
}

export function readChart(machine: AnyStateMachine): Chart {
  const nodes = getStateNodes(machine.root);
  const states = nodes.map((node) => ({ id: node.id, node }));
  const transitions: ChartTransition[] = [];
  const byDefinition = new Map<AnyTransitionDefinition, ChartTransition>();
  const add = (node: AnyStateNode, eventType: string, index: number, definition: AnyTransitionDefinition) => {
    const guard = guardName(definition);
    const targets = definition.target?.map((target) => target.id).join(", ") ?? "(stays, runs actions)";
    const event = eventName(machine.id, eventType);
    const transition: ChartTransition = {
      key: `${node.id} ${event}[${index}]`,
      label: `${node.id} --${event}${guard ? ` [${guard}]` : ""}${definition.reenter ? " (re-enter)" : ""}--> ${targets}`,
      definition,
    };
    transitions.push(transition);
    byDefinition.set(definition, transition);
  };
  for (const node of [machine.root, ...nodes]) {
    for (const [eventType, definitions] of node.transitions) definitions.forEach((definition, index) => add(node, eventType, index, definition));
    node.always?.forEach((definition, index) => add(node, "", index, definition));
  }
  return { states, transitions, transitionOf: (definition) => byDefinition.get(definition) };
}
