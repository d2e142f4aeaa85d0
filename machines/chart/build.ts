import { ToolOwners, ToolRegistry } from "../../actors/tool-providers.js";
import { ToolSet } from "../../tools/toolset.js";
import { loadConfig, type ReActConfig } from "../contract/config.js";
import type { AgentContext } from "../contract/context.js";
import type { EmittedBase } from "../contract/events.js";
import { ReActState, type StateSchema } from "../contract/state.js";
import { StateAccess } from "../contract/state-access.js";
import { agentToolsOf } from "./agent-tool-spec.js";
import type { AgentTools } from "./delegation.js";
import { llmInputs, type LlmInputs } from "./llm-input.js";
import { checkResolvedConfig, type ACTOR_NAMES, type ReactMachineOptions } from "./machine-options.js";
import { planOutput, type OutputPlan } from "./output.js";
import { RoundRequest } from "./round-request.js";

/** Which optional parts this agent has: each adds its states only when present. */
export interface ChartFeatures {
  /** `prepareRound`: PreparingRound. */
  readonly prepareRound: boolean;
  /** `config.context`: CheckContext and Compacting. */
  readonly context: boolean;
  /** `output`: CheckOutput. */
  readonly output: boolean;
  /** Any guard in Preflight (without one, Preflight allows the batch in an action). */
  readonly constraints: boolean;
  /** Agent tools or handoffs among the tools. */
  readonly nestedAgents: boolean;
  /** Agent tools: Delegating. */
  readonly delegates: boolean;
  /** Handoffs: HandingOff. */
  readonly handsOff: boolean;
  /** A call can wait for a person (a guard can ask, or a nested agent's guard can): AwaitingApproval. */
  readonly approvals: boolean;
  /** Input guardrails that run before the first model call: CheckInput and GuardingInput. */
  readonly blockingInput: boolean;
  /** Input guardrails that run beside the first model call: AwaitingInputCheck. */
  readonly parallelInput: boolean;
  /** `outputGuardrails`: GuardingOutput. */
  readonly outputGuardrails: boolean;
  /** `config.maxDurationMs`: the deadline timer on the root. */
  readonly deadline: boolean;
}

/**
 * What every piece of the chart is built from: the machine's options resolved once (config, state
 * access, tools, output plan) and the helpers the pieces share. Made once per machine by
 * `createReactMachine`; pieces read it, never change it.
 */
export interface ChartBuild {
  /** The machine's id; invoked actors' ids and state targets are prefixed with it. */
  readonly name: string;
  readonly options: ReactMachineOptions;
  readonly config: ReActConfig;
  /** The clock for deadlines, durations and timestamps. */
  readonly now: () => number;
  readonly access: StateAccess;
  /** The live tools, by run and agent actor. */
  readonly registry: ToolRegistry;
  /** Which agent actor an executor input belongs to (machines/chart/tool-piece.ts). */
  readonly toolOwners: ToolOwners;
  /** The agent tools and handoffs among the tools, by name. */
  readonly agents: AgentTools;
  /** The id of the nested agent a batch runs (one at a time). */
  readonly nestedId: string;
  readonly outputPlan: OutputPlan | undefined;
  /** What a round's plan and the output strategy change in a model request. */
  readonly round: RoundRequest;
  readonly llm: LlmInputs;
  readonly features: ChartFeatures;
  /** An invoked actor's id: `<name>.<actor>`. */
  childId(actor: keyof typeof ACTOR_NAMES): string;
  /** A state's absolute target: `#<name>.<path>`. */
  target(path: string): string;
  /** What every emitted event carries. */
  base(context: AgentContext, timestamp?: number): EmittedBase;
  /** One of the agent's fields, through the namespace and key remapping. */
  read<T>(context: AgentContext, field: string): T;
  /** The state view handed to actors (the same object while the host state is). */
  view(context: AgentContext): Record<string, unknown>;
}

/** Resolve a machine's options into what its pieces are built from (options already checked). */
export function chartBuild(options: ReactMachineOptions): ChartBuild {
  const name = options.name ?? "ReActAgent";
  const config: ReActConfig = loadConfig(options.config ?? {}, options.configFile === undefined ? {} : { path: options.configFile });
  checkResolvedConfig(config);
  const now = options.now ?? Date.now;
  const access = new StateAccess(options.stateSchema ?? (ReActState as unknown as StateSchema), options.namespace, config.keys);
  const providers = options.toolProviders ?? [];
  const registry = new ToolRegistry(ToolSet.empty().withTools(options.tools ?? []), providers.length > 0);
  // Agent tools and handoffs run as a nested agent, one at a time (machines/chart/delegation-piece.ts).
  const agents = agentToolsOf(options.tools ?? []);
  const delegates = [...agents.values()].some(({ spec }) => spec.kind === "agent");
  const handsOff = [...agents.values()].some(({ spec }) => spec.kind === "handoff");
  // "auto" decides from the model the requests go to: config.model, else the model client's own.
  const outputPlan = options.output
    ? planOutput(options.output, { strategy: config.outputStrategy, model: config.model ?? options.modelClient.model, toolNames: (options.tools ?? []).map((t) => t.name) })
    : undefined;
  const constraints = (options.constraints?.length ?? 0) > 0;
  const round = new RoundRequest(outputPlan);
  const read = <T>(context: AgentContext, field: string) => access.read<T>(context.state, field);
  /**
   * The state view handed to actors. The last one is reused while the host state is the same object
   * (it is never mutated, so the view stays true): Preflight and Executing see the same state.
   */
  let lastView: { state: AgentContext["state"]; view: Record<string, unknown> } | undefined;
  const view = (context: AgentContext) => {
    if (lastView?.state !== context.state) lastView = { state: context.state, view: access.view(context.state) };
    return lastView.view;
  };
  return {
    name,
    options,
    config,
    now,
    access,
    registry,
    toolOwners: new ToolOwners(),
    agents,
    nestedId: `${name}.agent`,
    outputPlan,
    round,
    llm: llmInputs({ name, config, hasContextBuilder: Boolean(options.contextBuilder), round, read, view }),
    features: {
      prepareRound: options.prepareRound !== undefined,
      context: config.context !== undefined,
      output: outputPlan !== undefined,
      constraints,
      nestedAgents: agents.size > 0,
      delegates,
      handsOff,
      approvals: constraints || agents.size > 0,
      blockingInput: (options.inputGuardrails ?? []).some((g) => g.mode !== "parallel"),
      parallelInput: (options.inputGuardrails ?? []).some((g) => g.mode === "parallel"),
      outputGuardrails: (options.outputGuardrails?.length ?? 0) > 0,
      deadline: config.maxDurationMs !== undefined,
    },
    childId: (actor) => `${name}.${actor}`,
    target: (path) => `#${name}.${path}`,
    base: (context, timestamp = now()) => ({ agent: name, runId: context.loop.runId, iteration: context.loop.iteration, timestamp }),
    read,
    view,
  };
}
