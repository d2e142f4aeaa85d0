import type { AnyEventObject } from "xstate";
import { getAdjacencyMap, getShortestPaths, type AdjacencyMap, type TraversalOptions } from "xstate/graph";
import type { PreflightOutput } from "../actors/guard.js";
import type { AgentInput } from "../machines/contract/context.js";
import type { ReActConfig } from "../machines/contract/config.js";
import type { StateAccess } from "../machines/contract/state-access.js";
import type { ReactMachine } from "../machines/react-machine.js";
import { readChart, type Chart } from "./model-based-chart.js";
import { classifyEvent, EventCatalogue, modelKey, serializeEvent, type EventKind } from "./model-based-events.js";
import { InvariantChecker, type GuardrailStates, type Violation } from "./model-based-invariants.js";
import { PureStepper, type AgentSnapshot } from "./model-based-pure.js";
import { JianmuError } from "../tools/jianmu-error.js";

/**
 * Path generation: `xstate/graph` builds the adjacency map of the coarse model and the
 * shortest path to every model state; each edge of the map then becomes a candidate path
 * (shortest way to its source, the edge, the cheapest way from its target to a final state).
 * Every candidate is re-run purely from the start, because the graph keeps one snapshot per
 * coarse state and so cannot give a path's exact contexts; the re-run checks the invariants
 * on every microstep and records the states and chart transitions it went through.
 */

export interface PathStep {
  readonly event: AnyEventObject;
  readonly kind: EventKind;
  readonly label: string;
  /** The model state after the event. */
  readonly key: string;
}

export interface PureRun {
  readonly steps: readonly PathStep[];
  readonly final: AgentSnapshot;
  readonly violations: readonly Violation[];
  readonly states: ReadonlySet<string>;
  readonly transitions: ReadonlySet<string>;
}

export interface ModelSetup {
  readonly machine: ReactMachine;
  readonly access: StateAccess;
  readonly config: ReActConfig;
  readonly input: AgentInput;
  readonly catalogue: EventCatalogue;
  readonly chart: Chart;
  readonly stepper: PureStepper;
  /** The chart invokes no guard actor (no constraints): Preflight allows every call by itself. */
  readonly unguarded: boolean;
  /** Which guardrail states the chart has. */
  readonly guardrails: GuardrailStates;
  key(snapshot: AgentSnapshot): string;
}

interface InvokingNode {
  invoke: readonly { src: unknown }[];
  states: Record<string, InvokingNode>;
}

/** Whether some state of the chart invokes `src`, read from the machine's definition. */
function invokes(node: InvokingNode, src: string): boolean {
  return node.invoke.some((def) => def.src === src) || Object.values(node.states).some((child) => invokes(child, src));
}

/** The traversal ran past `limit` model edges. */
export class ModelTooLargeError extends JianmuError {
  static override readonly errorCode = "MODEL_TOO_LARGE_ERROR";
  override name = "ModelTooLargeError";
}

export function createSetup(machine: ReactMachine, access: StateAccess, config: ReActConfig, input: AgentInput, catalogue: EventCatalogue): ModelSetup {
  return {
    machine,
    access,
    config,
    input,
    catalogue,
    chart: readChart(machine),
    stepper: new PureStepper(machine),
    unguarded: !invokes(machine.root as unknown as InvokingNode, "guard"),
    guardrails: {
      blockingInput: invokes(machine.root as unknown as InvokingNode, "inputGuardrails"),
      parallelInput: invokes(machine.root as unknown as InvokingNode, "parallelGuardrails"),
      output: invokes(machine.root as unknown as InvokingNode, "outputGuardrails"),
    },
    key: (snapshot) => modelKey(snapshot, access, config),
  };
}

/** A path as the traversal found it: its events, and the model state after each. */
export interface Candidate {
  readonly events: readonly AnyEventObject[];
  readonly keys: readonly string[];
}

/** Re-running a path did not reproduce the traversal's model states: the key misses something events depend on. */
export class ModelInconsistencyError extends JianmuError {
  static override readonly errorCode = "MODEL_INCONSISTENCY_ERROR";
  override name = "ModelInconsistencyError";
}

/** Re-run a path purely from the start, checking invariants on every microstep. */
export function runPure(setup: ModelSetup, candidate: Candidate): PureRun {
  const { events, keys } = candidate;
  const checker = new InvariantChecker(setup.access, setup.config, setup.unguarded, setup.guardrails);
  const states = new Set<string>();
  const transitions = new Set<string>();
  const visit = (snapshot: AgentSnapshot) => {
    for (const node of snapshot._nodes) if (node !== setup.machine.root) states.add(node.id);
  };
  const start = setup.stepper.initial(setup.input);
  visit(start.snapshot);
  for (const microstep of start.microsteps) checker.observe(microstep);
  let snapshot = start.snapshot;
  const steps: PathStep[] = [];
  events.forEach((event, index) => {
    checker.step = index + 1;
    const kind = classifyEvent(event, setup.machine.id);
    if (kind.kind === "done" && kind.src === "guard") checker.expectDecisions((kind.output as PreflightOutput).decisions);
    const next = setup.stepper.step(snapshot, event);
    for (const microstep of next.microsteps) {
      checker.observe(microstep);
      visit(microstep.snapshot);
      for (const definition of microstep.transitions) {
        const transition = setup.chart.transitionOf(definition);
        if (transition) transitions.add(transition.key);
      }
    }
    snapshot = next.snapshot;
    const key = setup.key(snapshot);
    if (key !== keys[index]) {
      throw new ModelInconsistencyError(`model-based: re-running event ${index + 1} (${event.type}) reached\n  ${key}\nwhere the traversal had\n  ${keys[index]}`);
    }
    steps.push({ event, kind, label: setup.catalogue.labelOf(event), key });
  });
  return { steps, final: snapshot, violations: checker.violations, states, transitions };
}

/** A state only a broken iteration bound reaches: paths end there (with their violation). */
function beyondLimit(setup: ModelSetup, snapshot: AgentSnapshot): boolean {
  return snapshot.context.loop.iteration > setup.config.maxIterations;
}

/** How much a completion prefers an event: the loop's own flow first, cancels and crashes last. */
function completionCost(kind: EventKind): number {
  if (kind.kind === "cancel" || kind.kind === "toolsFailed" || kind.kind === "error") return 4;
  return 1;
}

interface Edge {
  readonly from: string;
  readonly event: AnyEventObject;
  readonly to: string;
}

/** For every model state, the cheapest events from it to a final state (or to where exploring stopped). */
function completions(setup: ModelSetup, adjacency: AdjacencyMap<AgentSnapshot, AnyEventObject>, edges: readonly Edge[]): Map<string, readonly Edge[]> {
  const cost = new Map<string, number>();
  const next = new Map<string, Edge>();
  const incoming = new Map<string, Edge[]>();
  for (const edge of edges) incoming.set(edge.to, [...(incoming.get(edge.to) ?? []), edge]);
  // Dijkstra backwards from the final states; costs are small integers.
  const queue: { key: string; cost: number }[] = [];
  for (const [key, value] of Object.entries(adjacency)) {
    if (value.state.status !== "active" || beyondLimit(setup, value.state)) {
      cost.set(key, 0);
      queue.push({ key, cost: 0 });
    }
  }
  while (queue.length > 0) {
    queue.sort((a, b) => a.cost - b.cost);
    const { key, cost: reached } = queue.shift()!;
    if (reached !== cost.get(key)) continue;
    for (const edge of incoming.get(key) ?? []) {
      if (edge.from === edge.to) continue;
      const through = reached + completionCost(classifyEvent(edge.event, setup.machine.id));
      if (through < (cost.get(edge.from) ?? Infinity)) {
        cost.set(edge.from, through);
        next.set(edge.from, edge);
        queue.push({ key: edge.from, cost: through });
      }
    }
  }
  const cache = new Map<string, readonly Edge[]>();
  const completionOf = (key: string): readonly Edge[] => {
    const cached = cache.get(key);
    if (cached) return cached;
    const edge = next.get(key);
    const tail = edge ? [edge, ...completionOf(edge.to)] : [];
    cache.set(key, tail);
    return tail;
  };
  for (const key of Object.keys(adjacency)) completionOf(key);
  return cache;
}

/** Every edge of the model as a complete path from the start to a final state. */
export function candidatePaths(setup: ModelSetup, limit: number): Candidate[] {
  const logic = setup.stepper.logic(setup.input);
  const traversal: TraversalOptions<AgentSnapshot, AnyEventObject, AgentInput> = {
    events: (snapshot) => setup.catalogue.eventsFor(snapshot),
    serializeState: (snapshot) => setup.key(snapshot),
    serializeEvent: (event) => serializeEvent(event),
    // Past maxIterations the invariant is already broken; exploring on would never end.
    stopWhen: (snapshot) => beyondLimit(setup, snapshot),
    limit,
  };
  let adjacency: AdjacencyMap<AgentSnapshot, AnyEventObject>;
  let shortest: ReturnType<typeof getShortestPaths<typeof logic>>;
  try {
    adjacency = getAdjacencyMap(logic, traversal);
    shortest = getShortestPaths(logic, traversal);
  } catch (error) {
    if (error instanceof Error && /limit exceeded/i.test(error.message)) {
      throw new ModelTooLargeError(
        `generateAgentPaths: the model has more than ${limit} edges; pass fewer scripts, lower config.maxIterations, or raise options.limit`,
      );
    }
    throw error;
  }
  const prefixes = new Map<string, Candidate>();
  for (const path of shortest) {
    const steps = path.steps.slice(1);
    prefixes.set(setup.key(path.state), { events: steps.map((step) => step.event), keys: steps.map((step) => setup.key(step.state)) });
  }
  const edges: Edge[] = [];
  for (const [from, value] of Object.entries(adjacency)) {
    for (const { event, state } of Object.values(value.transitions) as { event: AnyEventObject; state: AgentSnapshot }[]) {
      edges.push({ from, event, to: setup.key(state) });
    }
  }
  const completion = completions(setup, adjacency, edges);
  const seen = new Set<string>();
  const candidates: Candidate[] = [];
  for (const edge of edges) {
    const prefix = prefixes.get(edge.from);
    const tail = completion.get(edge.to);
    if (!prefix || !tail) continue;
    const events = [...prefix.events, edge.event, ...tail.map((e) => e.event)];
    const id = events.map(serializeEvent).join("\n");
    if (seen.has(id)) continue;
    seen.add(id);
    candidates.push({ events, keys: [...prefix.keys, edge.to, ...tail.map((e) => e.to)] });
  }
  return candidates;
}

/** Pick few paths that together cover every state and transition any candidate covers. */
export function selectCovering(runs: readonly PureRun[]): PureRun[] {
  const uncovered = new Set<string>();
  const coverOf = (run: PureRun) => [...[...run.states].map((s) => `state ${s}`), ...[...run.transitions].map((t) => `transition ${t}`)];
  for (const run of runs) for (const item of coverOf(run)) uncovered.add(item);
  const chosen: PureRun[] = [];
  const left = [...runs];
  while (uncovered.size > 0) {
    let best: PureRun | undefined;
    let bestGain = 0;
    for (const run of left) {
      const gain = coverOf(run).filter((item) => uncovered.has(item)).length;
      if (gain > bestGain || (gain === bestGain && gain > 0 && best && run.steps.length < best.steps.length)) {
        best = run;
        bestGain = gain;
      }
    }
    if (!best) break;
    chosen.push(best);
    left.splice(left.indexOf(best), 1);
    for (const item of coverOf(best)) uncovered.delete(item);
  }
  return chosen;
}
