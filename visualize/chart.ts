import type { AnyStateMachine } from "xstate";
import type { Chart, ChartState, ChartTransition, TransitionKind } from "./chart-schema.js";

/**
 * A machine's statechart as plain data: nested states and every transition with a readable
 * label. It is built from the machine definition (`machine.root` and its state nodes), written
 * into recording headers, and drawn by the viewer and the Mermaid export.
 */

export type { Chart, ChartState, ChartTransition, TransitionKind } from "./chart-schema.js";

/** XState's kinds of state node; anything else is drawn as atomic. */
export const STATE_TYPES = ["atomic", "compound", "parallel", "final", "history"] as const;
const isStateType = (type: string): type is ChartState["type"] => (STATE_TYPES as readonly string[]).includes(type);

// ---- Reading the definition ------------------------------------------------------------------

/** The parts of an XState state node this module reads (XState's own types are generic-heavy). */
interface StateNodeLike {
  id: string;
  key: string;
  type: string;
  states: Record<string, StateNodeLike>;
  initial?: { target: readonly { id: string }[] } | undefined;
  transitions: Map<string, readonly TransitionLike[]>;
  always?: readonly TransitionLike[] | undefined;
  invoke: readonly { id: string; src: unknown }[];
  /** jianmu's charts say here which step a state asks the run's step host for (`meta.asks`). */
  meta?: unknown;
}
interface TransitionLike {
  eventType: string;
  target?: readonly { id: string }[] | undefined;
  reenter: boolean;
  guard?: unknown;
  delay?: unknown;
}

function rootOf(machine: AnyStateMachine): StateNodeLike {
  return machine.root as unknown as StateNodeLike;
}

function guardName(guard: unknown): string | undefined {
  if (guard === undefined || guard === null) return undefined;
  if (typeof guard === "string") return guard;
  if (typeof guard === "function") {
    // Inline guards are named after the property they were written in ("guard"): not informative.
    return guard.name && guard.name !== "guard" ? guard.name : "guarded";
  }
  if (typeof guard === "object" && typeof (guard as { type?: unknown }).type === "string") return (guard as { type: string }).type;
  return "guarded";
}

/** "ReActAgent.llm" → "llm": invoke ids are prefixed with the machine name in jianmu. */
function shortActorName(id: string): string {
  const dot = id.lastIndexOf(".");
  return dot >= 0 ? id.slice(dot + 1) : id;
}

function classify(eventType: string, node: StateNodeLike): { kind: TransitionKind; base: string } {
  if (eventType === "") return { kind: "always", base: "" };
  const invokeName = (id: string) => {
    const invoke = node.invoke.find((inv) => inv.id === id);
    return typeof invoke?.src === "string" ? invoke.src : shortActorName(id);
  };
  // The answers of the step the state asks the step host for (`meta.asks`) read like an invoked child's.
  const asked = askedStep(node)[0]?.src;
  if (asked !== undefined && eventType === `${asked}.done`) return { kind: "done", base: `${asked} done` };
  if (asked !== undefined && eventType === `${asked}.error`) return { kind: "error", base: `${asked} error` };
  if (eventType.startsWith("xstate.done.actor.")) return { kind: "done", base: `${invokeName(eventType.slice(18))} done` };
  if (eventType.startsWith("xstate.error.actor.")) return { kind: "error", base: `${invokeName(eventType.slice(19))} error` };
  if (eventType.startsWith("xstate.snapshot.")) return { kind: "snapshot", base: `${invokeName(eventType.slice(16))} snapshot` };
  if (eventType.startsWith("xstate.done.state.")) return { kind: "stateDone", base: "done" };
  if (eventType.startsWith("xstate.after.")) return { kind: "after", base: "after" };
  return { kind: "event", base: eventType };
}

function labelFor(base: string, kind: TransitionKind, guard: string | undefined, delay: unknown, elseBranch: boolean): string {
  const head = kind === "after" ? `after ${typeof delay === "number" ? `${delay}ms` : String(delay ?? "")}`.trim() : base;
  const condition = guard !== undefined ? `[${guard}]` : elseBranch ? "[else]" : "";
  if (kind === "always") return condition || "always";
  return condition ? `${head} ${condition}` : head;
}

function transitionsOf(node: StateNodeLike): [string, readonly TransitionLike[]][] {
  const lists: [string, readonly TransitionLike[]][] = [...node.transitions.entries()];
  if (node.always && node.always.length > 0) lists.push(["", node.always]);
  return lists;
}

function walk(node: StateNodeLike, visit: (node: StateNodeLike) => void): void {
  visit(node);
  for (const child of Object.values(node.states)) walk(child, visit);
}

/**
 * The step a state runs through the run's step host (AgentLLM's `llm`, Executing's `toolExecutor`),
 * shown as the state invoking it: the state waits on it as on an invoked child.
 */
function askedStep(node: StateNodeLike): { id: string; src: string }[] {
  const asks = (node.meta as { asks?: unknown } | undefined)?.asks;
  return typeof asks === "string" ? [{ id: `${node.id}:${asks}`, src: asks }] : [];
}

function toChartState(node: StateNodeLike): ChartState {
  const state: ChartState = {
    id: node.id,
    key: node.key ?? node.id,
    type: isStateType(node.type) ? node.type : "atomic",
    children: Object.values(node.states).map(toChartState),
    invokes: [...node.invoke.map((inv) => ({ id: inv.id, src: typeof inv.src === "string" ? inv.src : shortActorName(inv.id) })), ...askedStep(node)],
  };
  const initial = node.initial?.target[0]?.id;
  if (initial !== undefined) state.initial = initial;
  return state;
}

/** Walk the machine definition once: each transition object with its chart entry. */
function collect(machine: AnyStateMachine): { transition: TransitionLike; entry: ChartTransition }[] {
  const found: { transition: TransitionLike; entry: ChartTransition }[] = [];
  walk(rootOf(machine), (node) => {
    for (const [eventType, candidates] of transitionsOf(node)) {
      const { kind, base } = classify(eventType, node);
      candidates.forEach((transition, index) => {
        const guard = guardName(transition.guard);
        const elseBranch = guard === undefined && index > 0 && candidates.slice(0, index).some((c) => c.guard !== undefined);
        const entry: ChartTransition = {
          id: `${node.id}#${eventType === "" ? "always" : eventType}#${index}`,
          source: node.id,
          targets: (transition.target ?? []).map((t) => t.id),
          event: eventType,
          kind,
          label: labelFor(base, kind, guard, transition.delay, elseBranch),
          reenter: transition.reenter === true,
        };
        if (guard !== undefined) entry.guard = guard;
        found.push({ transition, entry });
      });
    }
  });
  return found;
}

/** The statechart of a machine, from its definition. */
export function describeMachine(machine: AnyStateMachine): Chart {
  return {
    machineId: machine.id,
    root: toChartState(rootOf(machine)),
    transitions: collect(machine).map((found) => found.entry),
  };
}

/**
 * Chart transition ids keyed by XState's transition objects, so a microstep's `_transitions`
 * can be named without guessing (they are the same objects the definition holds).
 */
export function transitionIdsOf(machine: AnyStateMachine): WeakMap<object, string> {
  const ids = new WeakMap<object, string>();
  for (const { transition, entry } of collect(machine)) ids.set(transition, entry.id);
  return ids;
}

/** Every state of the chart, parents before children. */
export function allStates(chart: Chart): ChartState[] {
  const out: ChartState[] = [];
  const visit = (state: ChartState) => {
    out.push(state);
    state.children.forEach(visit);
  };
  visit(chart.root);
  return out;
}

/** The ids of the states active in a state value (e.g. `{ Evaluating: "CheckAbort" }`), ancestors included. */
export function activeStateIds(root: ChartState, value: unknown): string[] {
  const ids = [root.id];
  const visit = (state: ChartState, node: unknown) => {
    if (typeof node === "string") {
      const child = state.children.find((c) => c.key === node);
      if (child) ids.push(child.id);
      return;
    }
    if (node && typeof node === "object") {
      for (const [key, sub] of Object.entries(node)) {
        const child = state.children.find((c) => c.key === key);
        if (!child) continue;
        ids.push(child.id);
        visit(child, sub);
      }
    }
  };
  visit(root, value);
  return ids;
}
