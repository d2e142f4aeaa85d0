import { assign, emit, enqueueActions, setup, type ActorRefFrom, type AnyStateMachine } from "xstate";
import type { z } from "zod";
import { createApprovalTimerActor } from "../actors/approval-timer.js";
import { createCompactionActor, needsCompaction, type CompactionInput, type CompactionOutput } from "../actors/compaction.js";
import { resilienceWithoutKeys } from "../actors/resilience-config.js";
import { loadTokenizer } from "../actors/token-count.js";
import type { ContextBuilder } from "../actors/context-builder.js";
import { toErrorInfo } from "../actors/errors.js";
import { createPreflightActor, type CallDecision, type CallRecord, type Guard } from "../actors/guard.js";
import { createLLMActor, type LLMInput, type LLMOutput, type LLMProgress } from "../actors/llm-step.js";
import type { Message, ToolCall } from "../actors/messages.js";
import { addUsage, isSaneUsage, type ModelClient, type Usage } from "../actors/model-client.js";
import { createToolExecutorActor, type ToolOutcome, type ToolProgress, type ToolRunner } from "../actors/tool-executor.js";
import { failureOf } from "../actors/tool-outcome.js";
import type { ToolJournal } from "../actors/tool-journal.js";
import { createToolProvidersActor, ToolOwners, ToolRegistry, toolsOwnerOf } from "../actors/tool-providers.js";
import type { ToolProvider } from "../tools/provider.js";
import type { Tool } from "../tools/tool.js";
import { ToolSet } from "../tools/toolset.js";
import { loadConfig, type ReActConfig, type ReActConfigInput } from "./contract/config.js";
import { runOutputFields } from "./chart/run-output.js";
import { errorTermination, initialContext, type AgentContext, type AgentInput, type AgentOutput } from "./contract/context.js";
import type { AgentEmitted, AgentEvent, ApproveEvent, EmittedBase, RejectEvent, TerminationReason } from "./contract/events.js";
import { ReActState, type StateSchema } from "./contract/state.js";
import { STATE_TAGS } from "./contract/state-tags.js";
import { StateAccess } from "./contract/state-access.js";
import { carriedProgress } from "./chart/progress.js";
import { commandShapeProblem, shownCallId } from "./contract/commands.js";
import { HeldCommands } from "./chart/held-commands.js";
import { errorInfoOf, isNestedStatus, isStartedCall, isToolList } from "./contract/event-payloads.js";
import { acceptOutput, FINAL_RESULT_TOOL, planOutput, recordOutputCheck, rejectOutput, type OutputPlan } from "./chart/output.js";
import { parsePartialJson } from "./chart/partial-json.js";
import { planRound, type PrepareRound } from "./chart/prepare-round.js";
import { RoundRequest } from "./chart/round-request.js";
import { applyDecisions, applyOutcomes, applyReply, decideCall, expireApprovals, recordStarted } from "./chart/transitions.js";
import { agentToolsOf } from "./chart/agent-tool-spec.js";
import * as nested from "./chart/delegation.js";
import { nestedAgentLogic } from "./chart/nested-agent.js";
import { JianmuError } from "../tools/jianmu-error.js";
import { attachRuntime, runtimeOf } from "./chart/agent-runtime.js";

export interface ReactMachineOptions<C = unknown, O extends z.ZodType = z.ZodType> {
  /** Machine id (default "ReActAgent"); invoked actor ids are prefixed with it. */
  name?: string;
  /** Read and write the agent's fields under `state[namespace]`. */
  namespace?: string;
  modelClient: ModelClient;
  tools?: readonly Tool[];
  toolProviders?: readonly ToolProvider<C>[];
  toolProviderContext?: C;
  toolRunner?: ToolRunner;
  /** Guards run in Preflight before every tool call. */
  constraints?: readonly Guard[];
  /** Builds the prompt; when given, `config.systemPrompt` is ignored. */
  contextBuilder?: ContextBuilder;
  /** Merged over `jianmu.yaml` and the built-in defaults. */
  config?: ReActConfigInput;
  /**
   * Which `jianmu.yaml` supplies the defaults: a path, or `false` for none (library code that must not
   * depend on the working directory). Default: `$JIANMU_CONFIG`, then `./jianmu.yaml` when it exists.
   */
  configFile?: string | false;
  /** `ReActState` or an extension of it. */
  stateSchema?: StateSchema;
  /** The clock used for deadlines, durations and timestamps (tests pin it). */
  now?: () => number;
  /** Records tool calls before their results are applied, so a restored run never runs one twice. */
  journal?: ToolJournal;
  /**
   * A zod schema for the final answer: the run succeeds only with a value that fits it, in
   * `output.output` (typed `z.infer<typeof schema>`). See `config.outputStrategy`, `config.outputRetries`.
   */
  output?: O;
  /** Decides each round's model, tools (a subset by name), toolChoice, extraParams and systemPrompt. Must be pure. */
  prepareRound?: PrepareRound;
}

/** Stable names of the invoked actors, for `machine.provide({ actors: { ... } })`. */
export const ACTOR_NAMES = {
  llm: "llm",
  guard: "guard",
  toolExecutor: "toolExecutor",
  toolProviders: "toolProviders",
  approvalTimer: "approvalTimer",
  compaction: "compaction",
} as const;

export class MachineOptionsError extends JianmuError {
  static override readonly errorCode = "MACHINE_OPTIONS_ERROR";
  override name = "MachineOptionsError";
  constructor(
    readonly field: string,
    problem: string,
  ) {
    super(`createReactMachine: options.${field} ${problem}`);
  }
}

function checkOptions<C, O extends z.ZodType>(options: ReactMachineOptions<C, O>): void {
  if (!options || typeof options !== "object") throw new MachineOptionsError("(all)", "must be an object with at least { modelClient }");
  if (!options.modelClient || typeof options.modelClient.complete !== "function") {
    throw new MachineOptionsError("modelClient", "is required: pass ModelClient.resolve({ ... }) or scriptedModel([...]) from jianmu/testing");
  }
  if (options.name !== undefined && !/^[A-Za-z][\w-]{0,63}$/.test(options.name)) {
    throw new MachineOptionsError("name", `must start with a letter and hold only letters, digits, '_' or '-', got ${JSON.stringify(options.name)}`);
  }
  if (options.namespace !== undefined && !/^[A-Za-z_$][\w$]*$/.test(options.namespace)) {
    throw new MachineOptionsError("namespace", `must be a plain field name, got ${JSON.stringify(options.namespace)}`);
  }
  for (const [field, value] of [
    ["tools", options.tools],
    ["toolProviders", options.toolProviders],
    ["constraints", options.constraints],
  ] as const) {
    if (value !== undefined && !Array.isArray(value)) throw new MachineOptionsError(field, "must be an array");
  }
  if (options.journal !== undefined && !["started", "completed", "lookup", "forget"].every((m) => typeof (options.journal as unknown as Record<string, unknown>)[m] === "function")) {
    throw new MachineOptionsError("journal", "must implement ToolJournal { started, completed, lookup, forget }, e.g. a SqliteCheckpointStore");
  }
  if (options.output !== undefined && typeof (options.output as { safeParse?: unknown } | null)?.safeParse !== "function") {
    throw new MachineOptionsError("output", "must be a zod schema, e.g. z.object({ answer: z.string() })");
  }
  if (options.prepareRound !== undefined && typeof options.prepareRound !== "function") {
    throw new MachineOptionsError("prepareRound", "must be a function (view) => ({ model?, tools?, toolChoice?, extraParams?, systemPrompt? })");
  }
  options.constraints?.forEach((guard, index) => {
    if (typeof guard !== "function") throw new MachineOptionsError(`constraints[${index}]`, "must be a guard function (call, ctx) => decision");
  });
}

/**
 * States that exist only with their option (`output`, `config.context`, `prepareRound`): an agent without
 * it has none of them, so nothing unreachable shows in its chart or its model-based coverage. Typed as
 * present, so the chart's state values name them.
 */
function when<const T extends object>(present: boolean, states: T): T {
  return present ? states : ({} as T);
}

/** Keys of the first-round-only tool choice inside `extraParams`. */
const TOOL_CHOICE_KEYS = new Set(["toolChoice", "tool_choice"]);

/**
 * Build the ReAct agent as an XState machine: LoopUntilSuccess made explicit
 * (Initialising → Evaluating{CheckAbort → ChildRunning} → CheckBudget → Retry | Succeeded | Failed),
 * with the LLM step, the guard preflight and the tool executor as invoked actors.
 */
export function createReactMachine<C = unknown, O extends z.ZodType = z.ZodNever>(options: ReactMachineOptions<C, O>) {
  checkOptions(options);
  const name = options.name ?? "ReActAgent";
  const config: ReActConfig = loadConfig(options.config ?? {}, options.configFile === undefined ? {} : { path: options.configFile });
  const now = options.now ?? Date.now;
  const access = new StateAccess(options.stateSchema ?? (ReActState as unknown as StateSchema), options.namespace, config.keys);
  const providers = options.toolProviders ?? [];
  const registry = new ToolRegistry(ToolSet.empty().withTools(options.tools ?? []), providers.length > 0);
  const childId = (actor: keyof typeof ACTOR_NAMES) => `${name}.${actor}`;
  // Agent tools and handoffs run as a nested agent, one at a time, under this id (machines/chart/delegation.ts).
  const agents = agentToolsOf(options.tools ?? []);
  const delegates = [...agents.values()].some(({ spec }) => spec.kind === "agent");
  const handsOff = [...agents.values()].some(({ spec }) => spec.kind === "handoff");
  const nestedId = `${name}.agent`;
  /** Spawn the nested agent by its logic name (`agent.<tool>`), provided below; the typed spawn only knows setup's actors. */
  const spawnNested = (enqueue: { spawnChild: unknown }, src: string, input: unknown) =>
    (enqueue.spawnChild as (src: string, options: { id: string; input: unknown }) => void)(src, { id: nestedId, input });
  const target = (path: string) => `#${name}.${path}`;
  /** No call of this agent's batch waits for a person, nor any call of the nested agent it runs. */
  const nothingWaits = (context: AgentContext) => !context.loop.decisions.some((d) => d.status === "pending") && !context.loop.delegation?.pending.length;
  const outputPlan = options.output
    ? planOutput(options.output, { strategy: config.outputStrategy, model: config.model, toolNames: (options.tools ?? []).map((t) => t.name) })
    : undefined;
  const contextLimit = config.context;
  if (contextLimit) loadTokenizer();
  const prepareRound = options.prepareRound;
  const round = new RoundRequest(outputPlan);

  const base = (context: AgentContext, timestamp = now()): EmittedBase => ({
    agent: name,
    runId: context.loop.runId,
    iteration: context.loop.iteration,
    timestamp,
  });
  const read = <T>(context: AgentContext, field: string) => access.read<T>(context.state, field);

  // What the LLM step gets besides the conversation is fixed per machine: built once (and frozen,
  // since every run shares it), not on every round.
  const sampling: LLMInput["sampling"] = {};
  if (config.model !== undefined) sampling.model = config.model;
  if (config.temperature !== undefined) sampling.temperature = config.temperature;
  if (config.maxTokens !== undefined) sampling.maxTokens = config.maxTokens;
  if (config.topP !== undefined) sampling.topP = config.topP;
  if (config.topK !== undefined) sampling.topK = config.topK;
  if (config.timeout !== undefined) sampling.timeoutMs = config.timeout * 1000;
  const fixedInput = Object.freeze({
    agent: name,
    // An explicit context builder owns the whole prompt, persona included.
    ...(config.systemPrompt !== undefined && !options.contextBuilder ? { systemPrompt: config.systemPrompt } : {}),
    sampling: Object.freeze(sampling),
    // Without keys: this input is persisted in every snapshot. The keys reach the LLM actor below.
    ...(config.resilience !== undefined ? { resilience: resilienceWithoutKeys(config.resilience) } : {}),
  });
  const firstRoundParams = Object.freeze({ ...config.extraParams });
  const laterRoundParams = Object.freeze(Object.fromEntries(Object.entries(config.extraParams).filter(([key]) => !TOOL_CHOICE_KEYS.has(key))));
  /**
   * The state view handed to actors. The last one is reused while the host state is the same object
   * (it is never mutated, so the view stays true): Preflight and Executing see the same state.
   */
  let lastView: { state: AgentContext["state"]; view: Record<string, unknown> } | undefined;
  const viewOf = (context: AgentContext) => {
    if (lastView?.state !== context.state) lastView = { state: context.state, view: access.view(context.state) };
    return lastView.view;
  };

  const llmInput = (context: AgentContext): LLMInput => {
    const rounds = read<number>(context, "rounds");
    const firstRound = rounds === 0;
    const input: LLMInput = {
      ...fixedInput,
      runId: context.loop.runId,
      iteration: context.loop.iteration,
      rounds,
      messages: read<Message[]>(context, "messages"),
      state: viewOf(context),
      tools: context.loop.tools,
      extraParams: firstRound ? firstRoundParams : laterRoundParams,
    };
    if (firstRound && config.toolChoice !== undefined) input.toolChoice = config.toolChoice;
    return round.apply(input, context.loop.round);
  };

  /** The compaction actor's input: the conversation and what the rest of this round's request weighs. */
  const compactionInput = (context: AgentContext): CompactionInput => {
    const plan = context.loop.round;
    const model = plan?.model ?? config.model;
    return {
      strategy: contextLimit!.strategy,
      messages: read<Message[]>(context, "messages"),
      maxTokens: contextLimit!.maxTokens,
      keepLast: contextLimit!.keepLast,
      overhead: promptOverhead(context),
      ...(model !== undefined ? { model } : {}),
      ...(sampling.timeoutMs !== undefined ? { timeoutMs: sampling.timeoutMs } : {}),
    };
  };
  const promptOverhead = (context: AgentContext) =>
    round.overhead(round.offered(context.loop.tools, context.loop.round), context.loop.round?.systemPrompt ?? fixedInput.systemPrompt);

  /** Check edited arguments against the tool's schema; undefined means they are fine. */
  const editProblem = (context: AgentContext, decision: CallDecision, args: Record<string, unknown> | string, owner?: string): string | undefined => {
    let parsed: unknown = args;
    if (typeof args === "string") {
      try {
        parsed = JSON.parse(args);
      } catch {
        return "the edited arguments are not valid JSON";
      }
    }
    const toolset = registry.toolsetNow(context.loop.runId, owner);
    if (!toolset) return "the tools are still starting; send the approval again in a moment";
    const tool = toolset.get(decision.name);
    if (!tool) return `there is no tool named "${decision.name}" to validate the edited arguments against`;
    const checked = tool.validate(parsed);
    return checked.ok ? undefined : `the edited arguments do not fit ${decision.name}: ${checked.error}`;
  };

  /** Why an approval or rejection cannot be applied; undefined when it can. */
  const commandProblem = (context: AgentContext, event: ApproveEvent | RejectEvent, owner?: string): string | undefined => {
    const decision = context.loop.decisions.find((d) => d.callId === event.callId);
    if (!decision) return `no call with id "${event.callId}" is waiting for approval`;
    if (decision.status !== "pending") return `call "${event.callId}" was already decided (${decision.status})`;
    if (event.type === "guard.approve" && event.args !== undefined) return editProblem(context, decision, event.args, owner);
    return undefined;
  };

  const heldCommands = new HeldCommands(registry);
  const toolOwners = new ToolOwners();
  /** Whether any guard runs in Preflight; without one the guard actor is never invoked. */
  const constrained = (options.constraints?.length ?? 0) > 0;
  /** Whether a call can wait for approval: a guard can ask for it, or a nested agent's guard can. */
  const approvals = constrained || agents.size > 0;

  const chart = setup({
    types: {
      context: {} as AgentContext,
      events: {} as AgentEvent,
      // Optional, so that `createActor(machine, { snapshot })` restores a run without a dummy input.
      input: {} as AgentInput | void,
      output: {} as AgentOutput<z.infer<O>>,
      emitted: {} as AgentEmitted,
    },
    actors: {
      llm: createLLMActor({
        modelClient: options.modelClient,
        now,
        ...(options.contextBuilder ? { contextBuilder: options.contextBuilder } : {}),
        ...(config.resilience !== undefined ? { resilience: config.resilience } : {}),
      }),
      guard: createPreflightActor(options.constraints ?? [], now),
      toolExecutor: createToolExecutorActor({
        toolset: (runId, owner) => registry.toolset(runId, owner),
        toolsetNow: (runId, owner) => registry.toolsetNow(runId, owner),
        owners: toolOwners,
        ...(options.toolRunner ? { runner: options.toolRunner } : {}),
        ...(options.journal ? { journal: options.journal } : {}),
        now,
      }),
      toolProviders: createToolProvidersActor(registry, providers, options.tools ?? [], options.toolProviderContext as C),
      approvalTimer: createApprovalTimerActor(now),
      compaction: createCompactionActor({ modelClient: options.modelClient }),
    },
    actions: {
      /** Record why the run ends; the error of a failed actor and the reason of a cancel are kept. */
      terminate: assign(({ context, event }, params: { reason: TerminationReason }) => {
        const error = "error" in event ? toErrorInfo(event.error) : undefined;
        const detail = event.type === "agent.cancel" ? event.reason : undefined;
        return { loop: { ...context.loop, termination: errorTermination(params.reason, context.loop.iteration, error, detail) } };
      }),
      /**
       * Model progress becomes telemetry; streamed text also grows `streamingOutput` in context. It
       * arrives in batches, and its last batch rides on the LLM step's result (see ProgressBatcher).
       */
      reportModelProgress: enqueueActions(({ context, event, enqueue }) => {
        const progress = carriedProgress<LLMProgress>(event);
        if (!progress) return;
        let text = "";
        let finalArguments: string | undefined;
        for (const { at, event: item } of progress) {
          // A final-result call's arguments are not telemetry themselves: they become output.partial below.
          if (item.type === "tool.arguments") {
            finalArguments = item.arguments;
            continue;
          }
          if (item.type === "text.delta" && typeof item.delta === "string") text += item.delta;
          // Object.assign, not `{ ...item, ...base }`: spreading two objects of varying shapes
          // takes a slow path in V8 (microseconds per event, on every model event).
          enqueue.emit(Object.assign({}, item, base(context, at)));
        }
        if (finalArguments !== undefined) {
          const partial = parsePartialJson(finalArguments);
          if (partial !== undefined) enqueue.emit({ type: "output.partial", ...base(context), partial });
        }
        if (text !== "") {
          const before = read<string>(context, "streamingOutput");
          enqueue.assign({ state: access.write(context.state, { streamingOutput: before + text }) });
          // A native structured output streams as JSON text: report what it holds so far.
          if (outputPlan?.strategy === "native") {
            const partial = parsePartialJson(before + text);
            if (partial !== undefined && JSON.stringify(partial) !== JSON.stringify(parsePartialJson(before))) {
              enqueue.emit({ type: "output.partial", ...base(context), partial });
            }
          }
        }
      }),
      /** Tool progress becomes telemetry; started calls join the history that budgets and rate limits read. */
      reportToolProgress: enqueueActions(({ context, event, enqueue }) => {
        const progress = carriedProgress<ToolProgress>(event);
        if (!progress) return;
        const started: CallRecord[] = [];
        for (const { at, event: item } of progress) {
          if (item.type === "tool.call.started" && isStartedCall(item, at)) started.push({ callId: item.callId, name: item.name, at });
          enqueue.emit(Object.assign({}, item, base(context, at)));
        }
        if (started.length > 0) enqueue.assign(recordStarted(context, started));
      }),
      /** guard.approve / guard.reject: apply it, or report why it changes nothing. */
      decideByCommand: enqueueActions(({ context, event, enqueue, self }) => {
        if (event.type !== "guard.approve" && event.type !== "guard.reject") return;
        // Checked before anything reads it: a malformed command never touches context.
        const shape = commandShapeProblem(event);
        // Restored while the providers start: an edit cannot be checked yet, so it waits for tools.ready.
        const owner = toolsOwnerOf(self, childId("toolProviders"));
        if (shape === undefined && heldCommands.hold(self, context.loop.runId, event, owner)) return;
        const problem = shape ?? commandProblem(context, event, owner);
        if (problem !== undefined) {
          enqueue.emit({ type: "guard.approval.refused", ...base(context), callId: shownCallId(event), reason: problem });
          return;
        }
        const decision = context.loop.decisions.find((d) => d.callId === event.callId)!;
        if (event.type === "guard.approve") {
          const edited = event.args !== undefined;
          const change: Partial<CallDecision> = { status: "approved" };
          if (edited) change.editedArguments = typeof event.args === "string" ? event.args : JSON.stringify(event.args);
          enqueue.assign(decideCall(context, event.callId, change));
          enqueue.emit({ type: "guard.approval.decided", ...base(context), callId: event.callId, name: decision.name, decision: "approved", edited });
          return;
        }
        const reason = event.reason ?? "the approver rejected this call";
        enqueue.assign(decideCall(context, event.callId, { status: "rejected", reason }));
        enqueue.emit({
          type: "guard.approval.decided",
          ...base(context),
          callId: event.callId,
          name: decision.name,
          decision: "rejected",
          edited: false,
          reason,
        });
        enqueue.emit({ type: "tool.call.denied", ...base(context), callId: event.callId, name: decision.name, reason, decision: "rejected" });
      }),
      /** Decisions that arrived while the providers were starting, in the order they came. */
      releaseHeldCommands: enqueueActions(({ enqueue, self }) => {
        for (const command of heldCommands.release(self)) enqueue.raise(command);
      }),
      /** guard.approve / guard.reject outside AwaitingApproval (e.g. a late second decision): report it, never drop it. */
      refuseCommand: enqueueActions(({ context, event, enqueue, self }) => {
        if (event.type === "agent.cancel") {
          enqueue.emit({ type: "agent.command.refused", ...base(context), command: event.type, reason: commandShapeProblem(event) ?? "refused" });
          return;
        }
        if (event.type !== "guard.approve" && event.type !== "guard.reject") return;
        const reason = commandShapeProblem(event) ?? commandProblem(context, event, toolsOwnerOf(self, childId("toolProviders"))) ?? `call "${event.callId}" is not waiting for approval`;
        enqueue.emit({ type: "guard.approval.refused", ...base(context), callId: shownCallId(event), reason });
      }),
      /** Preflight without constraints: the decisions the guard actor gives when no guard runs. */
      allowEveryCall: assign(({ context }) =>
        applyDecisions(context, { decisions: read<ToolCall[]>(context, "actions").map((call): CallDecision => ({ callId: call.id, name: call.name, status: "allowed" })) }),
      ),
      announceReply: enqueueActions(({ context, event, enqueue }) => {
        const turn = (event as { output?: Partial<LLMOutput> }).output;
        if (!turn || !Array.isArray(turn.toolCalls)) return;
        enqueue.emit({
          type: "reply.completed",
          ...base(context),
          round: read<number>(context, "rounds"),
          toolCalls: turn.toolCalls.length,
          finishReason: turn.finishReason ?? null,
          usage: turn.usage ?? { promptTokens: 0, completionTokens: 0, totalTokens: 0 },
          model: turn.model ?? "",
        });
      }),
      /** After Preflight: ask for each pending approval, report each denial. */
      announceDecisions: enqueueActions(({ context, enqueue }) => {
        const calls = new Map(read<ToolCall[]>(context, "actions").map((call) => [call.id, call]));
        for (const d of context.loop.decisions) {
          if (d.status === "pending") {
            enqueue.emit({
              type: "guard.approval.requested",
              ...base(context),
              callId: d.callId,
              name: d.name,
              arguments: calls.get(d.callId)?.arguments ?? "",
              ...(d.reason !== undefined ? { reason: d.reason } : {}),
              ...(d.deadline !== undefined ? { deadline: d.deadline } : {}),
            });
          } else if (d.status === "denied") {
            enqueue.emit({ type: "tool.call.denied", ...base(context), callId: d.callId, name: d.name, reason: d.reason ?? "denied", decision: "denied" });
          }
        }
      }),
      /** Runs before the expiry is applied, so it sees exactly the calls that time out now. */
      announceExpired: enqueueActions(({ context, event, enqueue }) => {
        const firedAt = (event as { output?: { firedAt?: number } }).output?.firedAt;
        if (firedAt === undefined) return;
        for (const d of context.loop.decisions) {
          if (d.status !== "pending" || d.deadline === undefined || d.deadline > firedAt) continue;
          const reason = "no approval arrived before the deadline";
          enqueue.emit({ type: "guard.approval.decided", ...base(context), callId: d.callId, name: d.name, decision: "rejected", edited: false, reason });
          enqueue.emit({ type: "tool.call.denied", ...base(context), callId: d.callId, name: d.name, reason, decision: "rejected" });
        }
      }),
      // ---- nested agents (agentTool, handoff): the logic is in delegation.ts ----
      /** A nested agent's telemetry, re-emitted with this level added to its agentPath; its model usage counts here too. */
      relayNestedAgent: enqueueActions(({ context, event, enqueue }) => {
        if (event.type !== "agent.emitted" || event.from !== nestedId) return;
        const relayed = nested.relayed(context, event.event);
        if (!relayed) return;
        // Usage joins this run's usage (and so its checkpoints): only counts that are sane (a forged event's are not).
        if (relayed.type === "reply.completed" && isSaneUsage(relayed.usage)) enqueue.assign(nested.addNestedUsage(context, access, relayed.usage));
        enqueue.emit(relayed);
      }),
      mirrorNestedAgent: assign(({ context, event }) =>
        event.type === "agent.status" && event.from === nestedId && isNestedStatus(event) ? nested.mirrorStatus(context, event.pending, event.moment) : context,
      ),
      startNestedAgent: enqueueActions(({ context, enqueue }) => {
        const step = nested.startNextAgent(context, agents, now());
        if (step.context === context) return;
        enqueue.assign(step.context);
        for (const outcome of step.failed) {
          enqueue.emit({ type: "tool.call.failed", ...base(context), callId: outcome.callId, name: outcome.name, durationMs: 0, ...failureOf(outcome) });
        }
        if (!step.start) return;
        const { call, src, input } = step.start;
        enqueue.assign(recordStarted(step.context, [{ callId: call.id, name: call.name, at: now() }]));
        enqueue.emit({ type: "tool.call.started", ...base(context), callId: call.id, name: call.name, arguments: step.context.loop.delegation!.current!.arguments });
        spawnNested(enqueue, src, input);
      }),
      finishNestedAgent: enqueueActions(({ context, event, enqueue }) => {
        const output = (event as { output?: Partial<AgentOutput> }).output;
        const ended =
          output && typeof output.status === "string"
            ? { output: output as AgentOutput }
            : { error: (event as { error?: unknown }).error ?? new Error("the nested agent ended without an output") };
        const { context: next, outcome } = nested.finishAgentCall(context, agents, ended, now(), config.maxToolOutputChars);
        enqueue.stopChild(nestedId);
        if (!outcome) return;
        enqueue.assign(next);
        const durationMs = outcome.durationMs ?? 0;
        if (outcome.status === "ok") {
          enqueue.emit({ type: "tool.call.completed", ...base(context), callId: outcome.callId, name: outcome.name, durationMs, output: outcome.content });
        } else {
          enqueue.emit({ type: "tool.call.failed", ...base(context), callId: outcome.callId, name: outcome.name, durationMs, ...failureOf(outcome) });
        }
      }),
      planDelegation: assign(({ context, event }) => {
        const output = (event as { output?: { outcomes?: ToolOutcome[] } }).output;
        return nested.planDelegation(context, read<ToolCall[]>(context, "actions"), agents, output?.outcomes ?? []);
      }),
      applyDelegated: assign(({ context }) => nested.applyDelegated(context, access)),
      startHandoff: enqueueActions(({ context, enqueue }) => {
        const step = nested.startHandoff(context, access, agents, now());
        if (!step.start) return;
        const { call, src, input } = step.start;
        enqueue.assign(step.context);
        const current = step.context.loop.delegation!.current!;
        enqueue.emit({ type: "agent.handoff", ...base(context), callId: call.id, name: call.name, from: name, to: current.agent, messages: current.carried });
        spawnNested(enqueue, src, input);
      }),
      finishHandoff: enqueueActions(({ context, event, enqueue }) => {
        const output = (event as { output?: AgentOutput }).output;
        enqueue.stopChild(nestedId);
        if (output) enqueue.assign(nested.finishHandoff(context, access, output));
      }),
      /** The handoff target failed or crashed: the run fails with reason handoffFailed, saying why. */
      failHandoff: assign(({ context, event }) => ({ loop: { ...context.loop, termination: nested.handoffTermination(context, event as { output?: unknown; error?: unknown }) } })),
      /** guard.approve / guard.reject for a call a nested agent waits on: pass it down one level. */
      forwardToNestedAgent: enqueueActions(({ context, event, enqueue }) => {
        if (event.type !== "guard.approve" && event.type !== "guard.reject") return;
        const route = nested.routeCommand(context, event);
        if (route === "own") return;
        if ("refused" in route) enqueue.emit({ type: "guard.approval.refused", ...base(context), callId: event.callId, reason: route.refused });
        else enqueue.sendTo(nestedId, route.forward);
      }),
      // Exit actions run before the transition's own: the batch's outcomes are applied after this, so context stays.
      stopNestedAgent: enqueueActions(({ context, enqueue }) => {
        if (context.loop.delegation) enqueue.stopChild(nestedId);
      }),
      /** PreparingRound: ask `prepareRound` for this round's plan; a bad plan is a programmer error and fails the actor. */
      planRound: assign(({ context }) => ({
        loop: {
          ...context.loop,
          round: planRound(prepareRound!, {
            runId: context.loop.runId,
            iteration: context.loop.iteration,
            rounds: read<number>(context, "rounds"),
            messages: read<Message[]>(context, "messages"),
            state: viewOf(context),
            tools: context.loop.tools.map((t) => t.name),
            usage: read<Usage>(context, "usage"),
          }),
        },
      })),
      /** Compacting done: the compacted history replaces the old one; summarizing's tokens join the run's usage. */
      applyCompaction: enqueueActions(({ context, event, enqueue }) => {
        const result = (event as { output?: CompactionOutput }).output;
        if (!result) return;
        enqueue.assign({ state: access.write(context.state, { messages: result.messages, usage: addUsage(read<Usage>(context, "usage"), result.usage) }) });
        enqueue.emit({ type: "context.compacted", ...base(context), strategy: contextLimit!.strategy, before: result.before, after: result.after, usage: result.usage });
      }),
      /** AgentLLM done with a final-result call: the reply is recorded like any other before CheckOutput reads it. */
      applyFinalReply: assign(({ context, event }) => applyReply(context, access, (event as unknown as { output: LLMOutput }).output)),
      checkOutput: assign(({ context }) => recordOutputCheck(context, access, outputPlan!)),
      acceptOutput: assign(({ context }) => acceptOutput(context, access)),
      rejectOutput: enqueueActions(({ context, enqueue }) => {
        const check = context.loop.output;
        enqueue.emit({ type: "output.invalid", ...base(context), error: check?.status === "invalid" ? check.error : "", failures: context.loop.outputFailures ?? 0 });
        enqueue.assign(rejectOutput(context, access, outputPlan!));
      }),
      /** Past `config.outputRetries`: the run fails with the last error and the raw text. */
      failOutput: assign(({ context }) => {
        const check = context.loop.output;
        const termination = errorTermination("invalidOutput", context.loop.iteration, {
          name: "OutputValidationError",
          message: check?.status === "invalid" ? check.error : "the final output was not accepted",
        });
        return { loop: { ...context.loop, termination: { ...termination, raw: check?.raw ?? "" } } };
      }),
      announceTermination: emit(({ context }) => ({
        type: "loop.terminated" as const,
        ...base(context),
        status: context.loop.termination ? ("failed" as const) : ("succeeded" as const),
        ...(context.loop.termination ? { reason: context.loop.termination.reason } : {}),
        rounds: read<number>(context, "rounds"),
        usage: read<Usage>(context, "usage"),
      })),
    },
    guards: {
      /** A user command fits its schema (machines/contract/commands.ts); anything else is refused, not applied. */
      wellFormedCommand: ({ event }) =>
        (event.type !== "agent.cancel" && event.type !== "guard.approve" && event.type !== "guard.reject") || commandShapeProblem(event) === undefined,
      isDone: ({ context }) => read<boolean>(context, "done") === true,
      budgetSpent: ({ context }) =>
        config.maxBudgetTokens !== undefined && read<Usage>(context, "usage").totalTokens >= config.maxBudgetTokens,
      iterationsLeft: ({ context }) => context.loop.iteration < config.maxIterations,
      nonePending: ({ context }) => nothingWaits(context),
      delegationPlanned: ({ context }) => nested.delegatedCalls(read<ToolCall[]>(context, "actions"), context.loop.decisions, agents).length > 0,
      nestedWaiting: ({ context, event }) =>
        event.type === "agent.status" && event.from === nestedId && isNestedStatus(event) && !!context.loop.delegation?.current && event.pending.length > 0,
      backToDelegating: ({ context }) => nothingWaits(context) && context.loop.delegation?.current?.kind === "agent",
      backToHandingOff: ({ context }) => nothingWaits(context) && context.loop.delegation?.current?.kind === "handoff",
      delegationDone: ({ context }) => !context.loop.delegation?.current && !context.loop.delegation?.queue.length,
      handoffNext: ({ context }) => !context.loop.delegation?.current && !context.loop.delegation?.queue.length && !!context.loop.delegation?.handoff,
      handoffSucceeded: ({ event }) => (event as { output?: AgentOutput }).output?.status === "succeeded",
      // A malformed command is never routed: decideByCommand refuses it, naming the field.
      forNestedAgent: ({ context, event }) =>
        (event.type === "guard.approve" || event.type === "guard.reject") && commandShapeProblem(event) === undefined && nested.routeCommand(context, event) !== "own",
      finalResultCalled: ({ event }) => (event as { output?: Partial<LLMOutput> }).output?.toolCalls?.some((c) => c.name === FINAL_RESULT_TOOL) === true,
      contextTooLong: ({ context }) => needsCompaction(read<Message[]>(context, "messages"), contextLimit!, promptOverhead(context)),
      outputValid: ({ context }) => context.loop.output?.status === "valid",
      outputRetriesLeft: ({ context }) => (context.loop.outputFailures ?? 0) <= config.outputRetries,
    },
  }).createMachine({
    id: name,
    description: "A ReAct agent: reason (the model) → call tools (guarded, maybe approved) → observe → repeat, until the state says done or a limit ends the run.",
    context: ({ input }) => initialContext(input, access, registry.staticInfo),
    initial: "Initialising",
    invoke: { id: childId("toolProviders"), src: "toolProviders", input: ({ context }) => ({ runId: context.loop.runId }) },
    on: {
      "agent.cancel": [
        { guard: "wellFormedCommand", target: ".Failed", description: "Cancelled: the run fails (cancelled), whatever it was doing.", actions: { type: "terminate", params: { reason: "cancelled" } } },
        { actions: "refuseCommand" },
      ],
      // A nested agent's telemetry, re-emitted with its path (it may arrive in any state of the batch).
      ...(agents.size > 0 ? { "agent.emitted": { actions: "relayNestedAgent" as const } } : {}),
      // AwaitingApproval handles these itself; anywhere else nothing waits for them.
      "guard.approve": { actions: "refuseCommand" },
      "guard.reject": { actions: "refuseCommand" },
      "tools.failed": {
        // Sent by the toolProviders actor; a malformed one from outside is ignored.
        guard: ({ event }) => errorInfoOf(event.error) !== undefined,
        target: ".Failed",
        description: "A tool provider could not start: the run fails (toolProviderError).",
        actions: assign({
          loop: ({ context, event }) => ({
            ...context.loop,
            termination: errorTermination("toolProviderError", context.loop.iteration, errorInfoOf(event.error)),
          }),
        }),
      },
    },
    states: {
      Initialising: {
        description: "Waits for the tool providers to start (tools.ready) before the first round.",
        tags: [STATE_TAGS.stable, STATE_TAGS.startingTools],
        on: {
          "tools.ready": {
            // Sent by the toolProviders actor; a malformed one from outside is ignored.
            guard: ({ event }) => isToolList(event.tools),
            target: "Evaluating",
            description: "The providers' tools are known: the first iteration starts.",
            actions: assign({ loop: ({ context, event }) => ({ ...context.loop, tools: event.tools }) }),
          },
        },
      },
      Evaluating: {
        description: "One iteration: check the abort conditions, then run a round (model, tools, state check).",
        // A new iteration starts clean: step fields (actions) and the last batch's decisions go.
        entry: assign(({ context }) => ({
          state: access.reset(context.state, "step"),
          loop: { ...context.loop, decisions: [] },
        })),
        initial: "CheckAbort",
        states: {
          CheckAbort: {
            description: "Ends the run when the token budget is spent (tokenBudget); otherwise goes on to the round.",
            always: [
              { guard: "budgetSpent", target: target("Failed"), description: "The token budget is spent: the run fails (tokenBudget).", actions: { type: "terminate", params: { reason: "tokenBudget" } } },
              { target: "ChildRunning", description: "Budget left: run the round." },
            ],
          },
          ChildRunning: {
            description: "A round: maybe prepare and compact, ask the model, run the tools it calls, then check the state.",
            initial: prepareRound ? "PreparingRound" : contextLimit ? "CheckContext" : "AgentLLM",
            states: {
              ...when(prepareRound !== undefined, {
                PreparingRound: {
                  description: "Asks prepareRound for this round's model, tools, toolChoice, extraParams and systemPrompt, validated, kept in loop.round.",
                  tags: ["round"],
                  entry: "planRound",
                  always: { target: contextLimit ? "CheckContext" : "AgentLLM", description: "The round's plan is kept: go on to the model." },
                },
              }),
              ...when(contextLimit !== undefined, {
                CheckContext: {
                  description: "Counts the next prompt's tokens; over config.context.maxTokens (with something to compact) it goes to Compacting.",
                  tags: ["context"],
                  always: [
                    { guard: "contextTooLong", target: "Compacting", description: "The prompt is over the limit: compact it first." },
                    { target: "AgentLLM", description: "The prompt fits: ask the model." },
                  ],
                },
                Compacting: {
                  description: "Trims or summarizes the middle of the conversation (never the system prompt, the first user message, the last keepLast messages, or a tool call without its results).",
                  tags: ["context", "busy", STATE_TAGS.stable],
                  invoke: {
                    id: childId("compaction"),
                    src: "compaction",
                    input: ({ context }) => compactionInput(context),
                    onDone: { target: "AgentLLM", description: "The shorter conversation replaces the old one.", actions: "applyCompaction" },
                    onError: { target: target("Failed"), description: "Summarizing failed: the run fails (modelError).", actions: { type: "terminate", params: { reason: "modelError" } } },
                  },
                },
              }),
              AgentLLM: {
                description: "Asks the model for the next reply (streamed); tool calls go to ToolExecutor, a plain reply to StateCondition.",
                tags: [STATE_TAGS.stable, STATE_TAGS.checkpoint, STATE_TAGS.modelCall],
                entry: [
                  assign(({ context }) => ({ state: access.write(context.state, { streamingOutput: "" }) })),
                  emit(({ context }) => ({ type: "reply.started" as const, ...base(context), round: read<number>(context, "rounds") + 1 })),
                ],
                invoke: {
                  id: childId("llm"),
                  src: "llm",
                  input: ({ context }) => llmInput(context),
                  onDone: [
                    ...(outputPlan?.tool
                      ? [
                          {
                            guard: "finalResultCalled" as const,
                            target: "CheckOutput",
                            description: "The model called the final-result tool: its arguments are the output to check.",
                            actions: ["reportModelProgress" as const, "applyFinalReply" as const, "announceReply" as const],
                          },
                        ]
                      : []),
                    {
                      guard: ({ event }) => event.output.toolCalls.length > 0,
                      target: "ToolExecutor",
                      description: "The reply calls tools: run them.",
                      actions: ["reportModelProgress", assign(({ context, event }) => applyReply(context, access, event.output)), "announceReply"],
                    },
                    {
                      target: "StateCondition",
                      description: "A plain reply: check whether the run is done.",
                      actions: ["reportModelProgress", assign(({ context, event }) => applyReply(context, access, event.output)), "announceReply"],
                    },
                  ],
                  // The error carries no progress (the actor flushed it before failing): settling first keeps every outcome alike.
                  onError: {
                    target: target("Failed"),
                    description: "The model call failed for good: the run fails (modelError).",
                    actions: ["reportModelProgress", { type: "terminate", params: { reason: "modelError" } }],
                  },
                },
                on: { "llm.progress": { actions: "reportModelProgress" } },
              },
              ToolExecutor: {
                description: "The batch of tool calls of one reply: guards, approvals, execution, nested agents.",
                initial: "Preflight",
                states: {
                  // Without constraints nothing can deny or hold a call: Preflight allows the batch in an action,
                  // with the decisions, events (none) and context the guard actor would give, and no actor per round.
                  Preflight: !constrained
                    ? {
                        description: "No constraints: every call of the batch is allowed at once (no guard actor runs).",
                        always: { target: "Executing", description: "Every call is allowed: run them.", actions: "allowEveryCall" },
                      }
                    : {
                        description: "Runs the guards on every call of the batch: each is allowed, denied or waits for approval.",
                        tags: [STATE_TAGS.stable],
                        invoke: {
                          id: childId("guard"),
                          src: "guard",
                          input: ({ context }) => ({
                            calls: read<ToolCall[]>(context, "actions"),
                            tools: context.loop.tools,
                            state: viewOf(context),
                            runId: context.loop.runId,
                            iteration: context.loop.iteration,
                            history: context.loop.history,
                          }),
                          onDone: [
                            {
                              guard: ({ event }) => event.output.decisions.some((d) => d.status === "pending"),
                              target: "AwaitingApproval",
                              description: "A guard asks for approval of at least one call.",
                              actions: [assign(({ context, event }) => applyDecisions(context, event.output)), "announceDecisions"],
                            },
                            {
                              target: "Executing",
                              description: "Every call is allowed or denied: run the allowed ones.",
                              actions: [assign(({ context, event }) => applyDecisions(context, event.output)), "announceDecisions"],
                            },
                          ],
                          onError: { target: target("Failed"), description: "A guard threw: the run fails (internalError).", actions: { type: "terminate", params: { reason: "internalError" } } },
                        },
                      },
                  // Only a guard or a nested agent can make a call wait: without either, no state waits for approval.
                  // (Typed as present, like `when`, so the chart's state values name it; not `when` itself, whose
                  // const type parameter would take away the inline guards' event types.)
                  ...(approvals
                    ? {
                        AwaitingApproval: {
                          description: "Waits for a person to approve (maybe with edited arguments) or reject each pending call, or for its deadline.",
                          tags: [STATE_TAGS.stable, STATE_TAGS.checkpoint, STATE_TAGS.approval],
                          // Waiting for a nested agent's calls: back to where the nested agent runs once they are decided.
                          always:
                            agents.size > 0
                              ? [
                                  ...(delegates ? [{ guard: "backToDelegating" as const, target: "Delegating", description: "The nested agent's calls are decided: back to it." }] : []),
                                  ...(handsOff ? [{ guard: "backToHandingOff" as const, target: "HandingOff", description: "The handoff target's calls are decided: back to it." }] : []),
                                  { guard: "nonePending" as const, target: "Executing", description: "Every call is decided: run the approved ones." },
                                ]
                              : { guard: "nonePending", target: "Executing", description: "Every call is decided: run the approved ones." },
                          invoke: {
                            id: childId("approvalTimer"),
                            src: "approvalTimer",
                            input: ({ context }) => {
                              const deadlines = context.loop.decisions.flatMap((d) => (d.status === "pending" && d.deadline !== undefined ? [d.deadline] : []));
                              return { deadline: deadlines.length > 0 ? Math.min(...deadlines) : null };
                            },
                            onDone: [
                              {
                                guard: ({ context, event }) =>
                                  context.loop.decisions.some(
                                    (d) => d.status === "pending" && d.onTimeout === "fail" && d.deadline !== undefined && d.deadline <= event.output.firedAt,
                                  ),
                                target: target("Failed"),
                                description: "A deadline passed for a call whose onTimeout is fail: the run fails (approvalTimeout).",
                                actions: { type: "terminate", params: { reason: "approvalTimeout" } },
                              },
                              {
                                // Re-entering restarts the timer for the next deadline, if any.
                                target: "AwaitingApproval",
                                description: "A deadline passed: those calls are rejected; wait on for the rest.",
                                reenter: true,
                                actions: ["announceExpired", assign(({ context, event }) => expireApprovals(context, event.output.firedAt))],
                              },
                            ],
                          },
                          on:
                            agents.size > 0
                              ? {
                                  "guard.approve": [{ guard: "forNestedAgent", actions: "forwardToNestedAgent" }, { actions: "decideByCommand" }],
                                  "guard.reject": [{ guard: "forNestedAgent", actions: "forwardToNestedAgent" }, { actions: "decideByCommand" }],
                                  "agent.status": { actions: "mirrorNestedAgent" },
                                  // After a restore the providers start while the run waits here: apply what was held.
                                  "tools.ready": { actions: "releaseHeldCommands" },
                                }
                              : {
                                  "guard.approve": { actions: "decideByCommand" },
                                  "guard.reject": { actions: "decideByCommand" },
                                  "tools.ready": { actions: "releaseHeldCommands" },
                                },
                        },
                      }
                    : ({} as never)),
                  Executing: {
                    description: "Runs the approved calls (in parallel or in sequence, as config.toolExecution says) and records their outcomes.",
                    tags: [STATE_TAGS.stable, STATE_TAGS.checkpoint],
                    invoke: {
                      id: childId("toolExecutor"),
                      src: "toolExecutor",
                      input: ({ context, self }) => toolOwners.mark({
                        runId: context.loop.runId,
                        iteration: context.loop.iteration,
                        calls: nested.executorCalls(read<ToolCall[]>(context, "actions"), context.loop.decisions, agents),
                        decisions: context.loop.decisions,
                        mode: config.toolExecution,
                        state: viewOf(context),
                        maxOutputChars: config.maxToolOutputChars,
                        ...(context.loop.round?.tools ? { offered: context.loop.round.tools } : {}),
                      }, toolsOwnerOf(self, childId("toolProviders"))),
                      onDone: [
                        ...(agents.size > 0
                          ? [
                              {
                                guard: "delegationPlanned" as const,
                                target: delegates ? "Delegating" : "HandingOff",
                                description: "The batch holds agent tools or a handoff: run them as nested agents.",
                                actions: ["reportToolProgress" as const, "planDelegation" as const],
                              },
                            ]
                          : []),
                        {
                          target: target("Evaluating.ChildRunning.StateCondition"),
                          description: "The batch's outcomes join the conversation: check whether the run is done.",
                          actions: ["reportToolProgress", assign(({ context, event }) => applyOutcomes(context, access, event.output))],
                        },
                      ],
                      onError: {
                        target: target("Failed"),
                        description: "The executor itself crashed (a tool's failure is an outcome, not this): the run fails (internalError).",
                        actions: ["reportToolProgress", { type: "terminate", params: { reason: "internalError" } }],
                      },
                    },
                    on: { "tool.progress": { actions: "reportToolProgress" } },
                  },
                  // Agent tools of the batch run one at a time as a nested agent (machines/chart/delegation.ts).
                  // (Cast: optional states must not change the chart's inferred state value type.)
                  ...((delegates
                    ? {
                        Delegating: {
                          description: "Runs the batch's agent tools one at a time, each as a nested agent whose answer is the call's result.",
                          tags: [STATE_TAGS.stable, STATE_TAGS.checkpoint, STATE_TAGS.nestedAgent],
                          entry: "startNestedAgent",
                          always: [
                            ...(handsOff ? [{ guard: "handoffNext" as const, target: "HandingOff", description: "The agent tools are done and a handoff is queued: hand over." }] : []),
                            {
                              guard: "delegationDone" as const,
                              target: target("Evaluating.ChildRunning.StateCondition"),
                              description: "Every agent tool has answered: their results join the conversation.",
                              actions: "applyDelegated" as const,
                            },
                          ],
                          on: {
                            "agent.status": [
                              { guard: "nestedWaiting", target: "AwaitingApproval", description: "The nested agent waits for approval: so does this run.", actions: "mirrorNestedAgent" },
                              { actions: "mirrorNestedAgent" },
                            ],
                            // Re-entering starts the next queued agent call, or leaves when there is none.
                            [`xstate.done.actor.${nestedId}`]: { target: "Delegating", reenter: true, description: "The agent tool answered: record it, start the next.", actions: "finishNestedAgent" },
                            [`xstate.error.actor.${nestedId}`]: { target: "Delegating", reenter: true, description: "The agent tool crashed: record the failure, start the next.", actions: "finishNestedAgent" },
                          },
                        },
                      }
                    : {}) as object),
                  // A handoff: the target agent takes the conversation over and its answer is this run's.
                  ...((handsOff
                    ? {
                        HandingOff: {
                          description: "Hands the conversation over to another agent; its answer becomes this run's.",
                          tags: [STATE_TAGS.stable, STATE_TAGS.checkpoint, STATE_TAGS.nestedAgent],
                          entry: "startHandoff",
                          on: {
                            "agent.status": [
                              { guard: "nestedWaiting", target: "AwaitingApproval", description: "The nested agent waits for approval: so does this run.", actions: "mirrorNestedAgent" },
                              { actions: "mirrorNestedAgent" },
                            ],
                            [`xstate.done.actor.${nestedId}`]: [
                              { guard: "handoffSucceeded", target: target("Evaluating.ChildRunning.StateCondition"), description: "The target answered: its answer is this run's.", actions: "finishHandoff" },
                              { target: target("Failed"), description: "The target failed: the run fails (handoffFailed).", actions: ["failHandoff", "finishHandoff"] },
                            ],
                            [`xstate.error.actor.${nestedId}`]: { target: target("Failed"), description: "The target crashed: the run fails (handoffFailed).", actions: ["failHandoff", "finishHandoff"] },
                          },
                        },
                      }
                    : {}) as object),
                },
                // Leaving the batch (done, cancelled, failed) stops a nested agent still running.
                exit: agents.size > 0 ? ["stopNestedAgent" as const] : [],
              },
              StateCondition: {
                description: "The round is over: done (state.done) succeeds (or checks the output), otherwise on to CheckBudget.",
                always: [
                  { guard: "isDone", target: outputPlan ? "CheckOutput" : target("Succeeded"), description: "state.done: the run has its answer." },
                  { target: target("CheckBudget"), description: "Not done: another iteration, if the budget allows." },
                ],
              },
              ...when(outputPlan !== undefined, {
                CheckOutput: {
                  description: "Validates the final output against the output schema; a mismatch goes back to the model (an iteration), past config.outputRetries the run fails (invalidOutput).",
                  tags: ["output"],
                  entry: "checkOutput",
                  always: [
                    { guard: "outputValid", target: target("Succeeded"), description: "The output fits the schema.", actions: "acceptOutput" },
                    { guard: "outputRetriesLeft", target: target("CheckBudget"), description: "It does not fit: the model is told why and tries again.", actions: "rejectOutput" },
                    { target: target("Failed"), description: "Out of output retries: the run fails (invalidOutput).", actions: "failOutput" },
                  ],
                },
              }),
            },
          },
        },
      },
      CheckBudget: {
        description: "Counts the iteration; past config.maxIterations the run fails (maxIterations), otherwise it retries.",
        entry: assign(({ context }) => ({ loop: { ...context.loop, iteration: context.loop.iteration + 1 } })),
        always: [
          { guard: "iterationsLeft", target: "Retry", description: "Iterations left: go again." },
          { target: "Failed", description: "config.maxIterations reached: the run fails (maxIterations).", actions: { type: "terminate", params: { reason: "maxIterations" } } },
        ],
      },
      Retry: {
        description: "Starts the next iteration.",
        always: { target: "Evaluating", description: "Starts the next iteration." },
      },
      Succeeded: { type: "final", description: "The run ended with an answer.", tags: [STATE_TAGS.stable], entry: "announceTermination" },
      Failed: { type: "final", description: "The run ended without an answer; loop.termination says why.", tags: [STATE_TAGS.stable], entry: "announceTermination" },
    },
    output: ({ context }) => {
      const output: AgentOutput<z.infer<O>> = { status: context.loop.termination ? "failed" : "succeeded", ...runOutputFields(context, access) };
      if (context.loop.termination) output.termination = context.loop.termination;
      if (outputPlan && !context.loop.termination && context.loop.output?.status === "valid") output.output = outputPlan.value(context.loop.output.raw) as z.infer<O>;
      return output;
    },
  });
  // Each agent tool's machine, as the logic of the nested agent that runs it (spawned by name, so persisted snapshots restore it).
  const machine: typeof chart = agents.size > 0
    ? chart.provide({ actors: Object.fromEntries([...agents].map(([tool, { spec }]) => [nested.nestedAgentSrc(tool), nestedAgentLogic(spec.machine as AnyStateMachine)])) as never })
    : chart;
  // One runtime object per machine (machines/chart/agent-runtime.ts): what the chart needs besides itself.
  attachRuntime(machine, { config, access, outputPlan, tools: registry });
  return machine;
}

/** Each machine's structured-output plan, when it has `output` (model-based tests script final outputs from it). */
export function outputPlanOf(machine: { config: object }): OutputPlan | undefined {
  return runtimeOf(machine)?.outputPlan;
}

/** Each machine's resolved config (model-based tests read maxIterations, the token budget and toolChoice). */
export function reactConfigOf(machine: { config: object }): ReActConfig | undefined {
  return runtimeOf(machine)?.config;
}

/** How each machine reads its state (restoring a snapshot checks the saved state against its schema). */
export function stateAccessOf(machine: { config: object }): StateAccess | undefined {
  return runtimeOf(machine)?.access;
}

/** Resolves when every tool provider used by a run has closed (after the run reached a final state or was stopped). */
export function toolProvidersClosed(machine: { config: object }, runId: string): Promise<void> {
  return runtimeOf(machine)?.tools.closed(runId) ?? Promise.resolve();
}

export type ReactMachine = ReturnType<typeof createReactMachine>;
export type ReactAgentRef = ActorRefFrom<ReactMachine>;
