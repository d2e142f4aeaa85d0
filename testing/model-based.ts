/**
 * Model-based tests of a jianmu agent, generated from its own statechart.
 *
 * `generateAgentPaths(machine, options)` walks the agent's ReAct machine with `xstate/graph`,
 * feeding it what its invoked actors could answer (model turns from `scripts`, guard verdicts
 * from `policy`, tool outcomes, failures of each actor) and what a person could send (cancel,
 * approve, reject). It returns complete paths, start to `Succeeded`/`Failed`, that together
 * cover every state and every transition of the chart that these inputs can reach, and a
 * coverage summary naming what they cannot. While generating, it checks the loop's invariants
 * on every microstep of every candidate path (see model-based-invariants.ts):
 * only allowed or approved calls run, iterations stay within `maxIterations`, every `Failed`
 * has a reason, each iteration starts with empty step fields and no decisions, and `toolChoice`
 * is sent on the first round only.
 *
 * `path.replay()` then runs the same path on a live actor of your machine: the real LLM step
 * over a `scriptedModel` holding the path's turns, your real guards (when you give a `policy`;
 * scripted verdicts otherwise), the real tool executor with your tools, and real
 * `agent.cancel`/`guard.approve`/`guard.reject` events. Each invoked actor waits until the
 * path says it finishes, so the order is the path's, never a race. The replay fails with
 * `InvariantViolation` when a live step breaks an invariant, and with `ReplayDivergence` when
 * the live run leaves the path (e.g. your guard decides differently from your policy).
 *
 * In vitest:
 *
 * ```ts
 * import { generateAgentPaths } from "jianmu/testing";
 *
 * const { paths, coverage } = generateAgentPaths(createReactMachine({ ... }), {
 *   scripts: [{ content: "4" }, { toolCalls: [{ name: "add", arguments: { a: 2, b: 2 } }] }],
 *   policy: (call) => (call.name === "send_email" ? { decision: "pending" } : { decision: "allow" }),
 * });
 * describe("my agent", () => {
 *   for (const path of paths) it(path.description, () => path.replay());
 *   it("covers the whole chart", () => expect(coverage.missing).toEqual([]));
 * });
 * ```
 *
 * Model states are coarse (state value, iteration, rounds, budget spent, the batch's tool names
 * and decision statuses), so keep `config.maxIterations` small (2 or 3) in the machine you
 * test this way. Tool outcomes are predicted from the executor's own checks: a runnable call
 * is assumed to succeed unless its tool is unknown, its arguments are not a JSON object or
 * lack a required property; a `returnDirect` tool that fails live therefore makes its replay
 * diverge (give it valid arguments in `scripts`). Tools of tool providers are unknown before a
 * run starts, so the default scripts call static tools only; name provider tools in `scripts`
 * (replays start your providers for real, once per path).
 *
 * The states that come with `output`, `config.context` and `prepareRound` are covered the same way:
 * with `output` the default scripts add a valid and an invalid final output; the compaction step is
 * played by the real trim (or a scripted summary, `SCRIPTED_SUMMARY`); `prepareRound` runs for real.
 * Model states do not hold the messages, so keep compaction a function of the iteration (e.g.
 * `maxTokens: 1, keepLast: 0`) and `prepareRound` a function of `rounds`/`iteration` in such tests.
 */
import type { AnyEventObject } from "xstate";
import { z } from "zod";
import { human } from "../actors/messages.js";
import type { AgentInput } from "../machines/contract/context.js";
import type { TerminationReason } from "../machines/contract/events.js";
import { FINAL_RESULT_TOOL } from "../machines/chart/output.js";
import { outputPlanOf, reactConfigOf, stateAccessOf, type ReactMachine } from "../machines/react-machine.js";
import { EventCatalogue, type EventKind } from "./model-based-events.js";
import { exampleArguments, type ModelTurnScript, type Policy } from "./model-based-inputs.js";
import type { Violation } from "./model-based-invariants.js";
import { candidatePaths, createSetup, runPure, selectCovering, type ModelSetup, type PureRun } from "./model-based-paths.js";
import { replayPath, type ReplayOptions, type ReplayResult } from "./model-based-replay.js";

export type { EventKind } from "./model-based-events.js";
export type { ModelTurnScript, Policy, PolicyCall, PolicyDecision } from "./model-based-inputs.js";
export { InvariantViolation, type InvariantName, type Violation } from "./model-based-invariants.js";
export { ModelInconsistencyError, ModelTooLargeError } from "./model-based-paths.js";
export { ReplayDivergence, type ReplayOptions, type ReplayResult } from "./model-based-replay.js";

export interface AgentPathsOptions {
  /**
   * The model turns offered wherever the agent waits for the model (a model error is always
   * offered too). Default: a plain answer, one call of each tool with arguments made from its
   * schema (required properties, plainest values), and a call of a tool that does not exist. With `config.maxBudgetTokens`, a copy of the first
   * tool-calling turn that spends the whole budget is added.
   */
  scripts?: readonly ModelTurnScript[];
  /**
   * What your guards decide for a call. Given, the model uses it and replays run your real
   * guard step, failing when it decides otherwise. Omitted, every batch is tried as allowed,
   * denied, pending, and pending with a deadline (rejecting or failing), and replays script
   * the guard step instead.
   */
  policy?: Policy;
  /** The run's input (default: one user message and a fixed run id). */
  input?: AgentInput;
  /** The most model edges to traverse before giving up with ModelTooLargeError (default 50 000). */
  limit?: number;
  /**
   * "transitions" (default): few paths that together cover every reachable state and transition.
   * "edges": one path per edge of the model (every event in every model state): many more paths.
   */
  select?: "transitions" | "edges";
}

export interface PathStepInfo {
  readonly event: AnyEventObject;
  readonly kind: EventKind;
  readonly label: string;
}

export interface FinalState {
  /** "Stopped": the path ends past maxIterations, where exploring stops (it always carries a violation). */
  readonly value: "Succeeded" | "Failed" | "Stopped";
  readonly reason?: TerminationReason;
  readonly iterations: number;
  readonly rounds: number;
}

export interface AgentPath {
  /** Unique; reads as what happens, e.g. `#3 Failed (cancelled): tools ready → model calls add → cancel`. */
  readonly description: string;
  /** The events, in order, as the machine receives them. */
  readonly events: readonly AnyEventObject[];
  readonly steps: readonly PathStepInfo[];
  readonly finalState: FinalState;
  /** Invariants the pure run of this path broke (replay throws them first). */
  readonly violations: readonly Violation[];
  /** Run the path on a live actor; resolves when it reached the same final state. */
  replay(options?: ReplayOptions): Promise<ReplayResult>;
}

export interface CoverageSummary {
  /** State nodes of the chart (root excluded). */
  readonly states: number;
  readonly coveredStates: number;
  /** Transition candidates of the chart (each guarded alternative counts). */
  readonly transitions: number;
  readonly coveredTransitions: number;
  /** Ids of the states and labels of the transitions no path covers. */
  readonly missing: readonly string[];
  /** One line, e.g. "states 15/15 (100%), transitions 33/33 (100%)". */
  readonly text: string;
}

export interface AgentPaths {
  readonly paths: readonly AgentPath[];
  readonly coverage: CoverageSummary;
  /** Every violation found in any candidate path (violating candidates are also among `paths`). */
  readonly violations: readonly (Violation & { path: string })[];
  /** How many candidate paths were generated and checked before selecting `paths`. */
  readonly candidates: number;
  replay(path: AgentPath, options?: ReplayOptions): Promise<ReplayResult>;
}

/** Violating candidates kept as paths beyond the covering ones, so they show up as failing tests. */
const MAX_EXTRA_VIOLATING = 20;

function defaultScripts(setup: ModelSetup): ModelTurnScript[] {
  const tools = setup.stepper.initial(setup.input).snapshot.context.loop.tools;
  return [
    { content: "Done." },
    ...tools.map((tool) => ({ toolCalls: [{ name: tool.name, arguments: exampleArguments(tool.inputSchema) }] })),
    { label: "calls a tool that does not exist", toolCalls: [{ name: "no_such_tool", arguments: {} }] },
    ...outputScripts(setup.machine),
  ];
}

/** With `output`: a final output that fits the schema and one that does not, as the strategy asks for them. */
function outputScripts(machine: ReactMachine): ModelTurnScript[] {
  const plan = outputPlanOf(machine);
  if (!plan) return [];
  const example = exampleArguments(plan.jsonSchema);
  if (plan.strategy === "native") return [{ label: "answers with a valid output", content: JSON.stringify(example) }];
  return [
    { label: "gives a valid final result", toolCalls: [{ name: FINAL_RESULT_TOOL, arguments: example }] },
    { label: "gives a final result that is not JSON", toolCalls: [{ name: FINAL_RESULT_TOOL, arguments: "{not json" }] },
  ];
}

function finalStateOf(run: PureRun, setup: ModelSetup): FinalState {
  const { context } = run.final;
  const value = run.final.matches("Succeeded") ? "Succeeded" : run.final.matches("Failed") ? "Failed" : "Stopped";
  return {
    value,
    ...(context.loop.termination ? { reason: context.loop.termination.reason } : {}),
    iterations: context.loop.iteration,
    rounds: setup.access.read<number>(context.state, "rounds"),
  };
}

function percent(covered: number, total: number): string {
  return total === 0 ? "100%" : `${Math.floor((covered / total) * 1000) / 10}%`;
}

function coverageOf(setup: ModelSetup, runs: readonly PureRun[]): CoverageSummary {
  const states = new Set<string>();
  const transitions = new Set<string>();
  for (const run of runs) {
    for (const state of run.states) states.add(state);
    for (const transition of run.transitions) transitions.add(transition);
  }
  const { chart } = setup;
  const coveredStates = chart.states.filter((s) => states.has(s.id)).length;
  const coveredTransitions = chart.transitions.filter((t) => transitions.has(t.key)).length;
  const missing = [
    ...chart.states.filter((s) => !states.has(s.id)).map((s) => `state ${s.id}`),
    ...chart.transitions.filter((t) => !transitions.has(t.key)).map((t) => `transition ${t.label}`),
  ];
  const text =
    `states ${coveredStates}/${chart.states.length} (${percent(coveredStates, chart.states.length)}), ` +
    `transitions ${coveredTransitions}/${chart.transitions.length} (${percent(coveredTransitions, chart.transitions.length)})`;
  return { states: chart.states.length, coveredStates, transitions: chart.transitions.length, coveredTransitions, missing, text };
}

const ScriptSchema = z
  .object({
    label: z.string().min(1).optional(),
    content: z.string().optional(),
    toolCalls: z.array(z.object({ name: z.string().min(1), arguments: z.union([z.record(z.string(), z.unknown()), z.string()]) }).strict()).optional(),
    usage: z.object({ promptTokens: z.number().int().min(0), completionTokens: z.number().int().min(0) }).strict().optional(),
    finishReason: z.string().optional(),
  })
  .strict();
const OptionsSchema = z
  .object({
    scripts: z.array(ScriptSchema).min(1, "give at least one model turn").optional(),
    policy: z.custom<Policy>((value) => typeof value === "function", "must be a function (call) => { decision: ... }").optional(),
    input: z.custom<AgentInput>((value) => typeof value === "object" && value !== null, "must be an object { messages?, state?, runId? }").optional(),
    limit: z.number().int().positive().optional(),
    select: z.enum(["transitions", "edges"]).optional(),
  })
  .strict();

function checkOptions(options: unknown): AgentPathsOptions {
  const parsed = OptionsSchema.safeParse(options ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const field = ["options", ...issue.path.map(String)].join(".");
    throw new TypeError(`generateAgentPaths: ${field}: ${issue.message}`);
  }
  return parsed.data as AgentPathsOptions;
}

/** Generate covering paths of an agent machine made by `createReactMachine` (see the file comment). */
export function generateAgentPaths(machine: ReactMachine, rawOptions: AgentPathsOptions = {}): AgentPaths {
  const options = checkOptions(rawOptions);
  const config = reactConfigOf(machine);
  const access = stateAccessOf(machine);
  if (!config || !access) {
    throw new TypeError("generateAgentPaths: machine must be made by createReactMachine (or derived from one with .provide())");
  }
  const input: AgentInput = options.input ?? { messages: [human("Model-based test run")], runId: "model-based-run" };
  const probe = createSetup(machine, access, config, input, new EventCatalogue({ machineId: machine.id, access, config, scripts: [] }));
  const scripts = options.scripts ?? defaultScripts(probe);
  const catalogue = new EventCatalogue({ machineId: machine.id, access, config, scripts, ...(options.policy ? { policy: options.policy } : {}) });
  const setup = createSetup(machine, access, config, input, catalogue);

  const runs = candidatePaths(setup, options.limit ?? 50_000).map((candidate) => runPure(setup, candidate));
  const covering = options.select === "edges" ? runs : selectCovering(runs);
  const violating = runs.filter((run) => run.violations.length > 0 && !covering.includes(run)).slice(0, MAX_EXTRA_VIOLATING);
  const selected = [...covering, ...violating];

  const replayOf = (run: PureRun, path: AgentPath, replayOptions?: ReplayOptions) =>
    replayPath(setup, { description: path.description, steps: run.steps, violations: run.violations }, { ...replayOptions, policy: options.policy !== undefined });
  const paths = selected.map((run, index): AgentPath => {
    const finalState = finalStateOf(run, setup);
    const description = `#${index + 1} ${finalState.value}${finalState.reason ? ` (${finalState.reason})` : ""}: ${run.steps.map((s) => s.label).join(" → ")}`;
    const path: AgentPath = {
      description,
      events: run.steps.map((s) => s.event),
      steps: run.steps.map(({ event, kind, label }) => ({ event, kind, label })),
      finalState,
      violations: run.violations,
      replay: (replayOptions) => replayOf(run, path, replayOptions),
    };
    return path;
  });
  const byPath = new Map(paths.map((path, index) => [path, selected[index]!]));
  return {
    paths,
    coverage: coverageOf(setup, selected),
    violations: runs.flatMap((run, index) => run.violations.map((v) => ({ ...v, path: `candidate ${index + 1}: ${run.steps.map((s) => s.label).join(" → ")}` }))),
    candidates: runs.length,
    replay: async (path, replayOptions) => {
      const run = byPath.get(path);
      if (!run) throw new TypeError("replay: pass one of the paths this generateAgentPaths call returned");
      return replayOf(run, path, replayOptions);
    },
  };
}
