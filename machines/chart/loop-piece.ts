import { assign, enqueueActions, emit, sendTo } from "xstate";
import { toErrorInfo } from "../../actors/errors.js";
import { createLLMActor, type LLMOutput, type LLMProgress } from "../../actors/llm-step.js";
import type { Usage } from "../../actors/model-client.js";
import { pricedUsage } from "../../actors/pricing.js";
import { spendRefusal, unreportedOf } from "../../actors/spend.js";
import { stepHost } from "../../actors/step-host.js";
import { createToolProvidersActor } from "../../actors/tool-providers.js";
import { commandShapeProblem } from "../contract/commands.js";
import { errorTermination, type AgentContext, type AgentOutput } from "../contract/context.js";
import { errorInfoOf, isToolList } from "../contract/event-payloads.js";
import type { AgentEmitted, AgentEvent, TerminationReason } from "../contract/events.js";
import { STATE_TAGS } from "../contract/state-tags.js";
import type { ChartBuild } from "./build.js";
import { parsePartialJson } from "./partial-json.js";
import { defineActions, defineGuards, stateConfig, type AgentInvoke, type AgentOn, type DoneBranch } from "./piece.js";
import { heard } from "./audience.js";
import { carriedProgress } from "./progress.js";
import { addUnreported, spentBudget, unreportedSpend } from "./spend.js";
import { runOutputFields } from "./run-output.js";
import { stepLogic, type StepName } from "./steps.js";
import { applyReply } from "./transitions.js";

/**
 * The loop itself, the seed's chart: Initialising → Evaluating{CheckAbort → ChildRunning{AgentLLM →
 * StateCondition}} → CheckBudget → Retry | Succeeded | Failed, the model call as the invoked `llm`,
 * and the tool providers' lifetime on the root. Its pure context updates are in transitions.ts.
 */

export function loopImplementation(build: ChartBuild) {
  const { options, config, now, access, registry, read, base } = build;

  /**
   * A batch of model progress (carried by `event`, if any): its telemetry goes to `emitEvent` when the
   * run is heard (audience.ts); returns the streamed text's new value, or undefined when it is unchanged.
   */
  const settleModelProgress = (context: AgentContext, event: AgentEvent, listened: boolean, emitEvent: (event: AgentEmitted) => void): string | undefined => {
    const progress = carriedProgress<LLMProgress>(event);
    if (!progress) return undefined;
    let text = "";
    let finalArguments: string | undefined;
    for (const { at, event: item } of progress) {
      // A final-result call's arguments are not telemetry themselves: they become output.partial below.
      if (item.type === "tool.arguments") {
        finalArguments = item.arguments;
        continue;
      }
      if (item.type === "text.delta" && typeof item.delta === "string") text += item.delta;
      if (!listened) continue;
      // An attempt's usage, priced like the reply's (per attempt: a fallback's model has its own price).
      if (item.type === "model.call.completed" && config.pricing) {
        emitEvent(Object.assign({}, item, { usage: pricedUsage(item.usage, config.pricing, item.model) }, base(context, at)));
        continue;
      }
      // Object.assign, not `{ ...item, ...base }`: spreading two objects of varying shapes
      // takes a slow path in V8 (microseconds per event, on every model event).
      emitEvent(Object.assign({}, item, base(context, at)));
    }
    if (finalArguments !== undefined && listened) {
      const partial = parsePartialJson(finalArguments);
      if (partial !== undefined) emitEvent({ type: "output.partial", ...base(context), partial });
    }
    if (text === "") return undefined;
    const before = read<string>(context, "streamingOutput");
    // A native structured output streams as JSON text: report what it holds so far.
    if (build.outputPlan?.strategy === "native" && listened) {
      const partial = parsePartialJson(before + text);
      if (partial !== undefined && JSON.stringify(partial) !== JSON.stringify(parsePartialJson(before))) {
        emitEvent({ type: "output.partial", ...base(context), partial });
      }
    }
    return before + text;
  };

  /** reply.completed for a reply that has joined `context`. */
  const replyCompleted = (context: AgentContext, turn: Partial<LLMOutput>): AgentEmitted => ({
    type: "reply.completed",
    ...base(context),
    round: read<number>(context, "rounds"),
    toolCalls: turn.toolCalls?.length ?? 0,
    finishReason: turn.finishReason ?? null,
    usage: turn.usage ? pricedUsage(turn.usage, config.pricing, turn.model, turn.serverModel) : { promptTokens: 0, completionTokens: 0, totalTokens: 0 },
    model: turn.model ?? "",
  });
  return {
    actors: {
      llm: createLLMActor({
        modelClient: options.modelClient,
        now,
        ...(options.contextBuilder ? { contextBuilder: options.contextBuilder } : {}),
        ...(config.resilience !== undefined ? { resilience: config.resilience } : {}),
      }),
      steps: stepHost(),
      toolProviders: createToolProvidersActor(registry, options.toolProviders ?? [], options.tools ?? [], options.toolProviderContext),
    },
    actions: defineActions({
      /** Record why the run ends; the error of a failed actor and the reason of a cancel are kept. */
      terminate: assign(({ context, event }, params: { reason: TerminationReason }) => {
        const error = "error" in event ? toErrorInfo(event.error) : undefined;
        const detail = event.type === "agent.cancel" ? event.reason : undefined;
        // A call that failed for good may still have been billed for attempts that reported nothing.
        const spend = addUnreported(context.loop.spend, "error" in event ? unreportedOf(event.error) : undefined);
        return { loop: { ...context.loop, ...(spend ? { spend } : {}), termination: errorTermination(params.reason, context.loop.iteration, error, detail) } };
      }),
      /**
       * Model progress becomes telemetry; streamed text also grows `streamingOutput` in context. It
       * arrives in batches, and its last batch rides on the LLM step's result (see ProgressBatcher).
       */
      reportModelProgress: enqueueActions(({ context, event, enqueue, self }) => {
        const streamingOutput = settleModelProgress(context, event, heard(self), enqueue.emit);
        if (streamingOutput !== undefined) enqueue.assign({ state: access.write(context.state, { streamingOutput }) });
      }),
      /**
       * AgentLLM's reply settles (on every branch that takes the reply: a plain one, tool calls, a
       * final-result call, a reply waiting for the input guardrails): its last progress, the reply
       * joining the conversation (priced by config.pricing), then reply.completed from the context
       * it joined, in one action with one assign (it was three actions: each is an interpreter step
       * per round, bench/counts.mjs).
       */
      settleReply: enqueueActions(({ context, event, enqueue, self }) => {
        const listened = heard(self);
        const streamingOutput = settleModelProgress(context, event, listened, enqueue.emit);
        const streamed = streamingOutput === undefined ? context : { ...context, state: access.write(context.state, { streamingOutput }) };
        const turn = (event as unknown as { output: LLMOutput }).output;
        const replied = applyReply(streamed, access, turn, config.pricing);
        enqueue.assign(replied);
        if (listened) enqueue.emit(replyCompleted(replied, turn));
      }),
      /**
       * A model call starts: its streamed text starts empty, and reply.started is told. One action, with
       * neither an assign when the text is already empty (the rounds that only called tools) nor an
       * event when nobody can hear the run (audience.ts): each costs the interpreter a step per round.
       */
      startReply: enqueueActions(({ context, enqueue, self }) => {
        if (read<string>(context, "streamingOutput") !== "") enqueue.assign({ state: access.write(context.state, { streamingOutput: "" }) });
        if (heard(self)) enqueue.emit({ type: "reply.started", ...base(context), round: read<number>(context, "rounds") + 1 });
      }),
      /** AgentLLM asks the step host for the model's reply. */
      requestReply: sendTo(build.childId("steps"), ({ context, self }, params?: { again: true }) => ({
        type: "step.request",
        step: "llm",
        input: build.llm.input(context),
        logic: stepLogic(self, "llm"),
        ...params,
      })),
      /**
       * A state that waited on a step leaves before its answer for a state that is not final: the step
       * stops. (Every way to a final state stops the step host, and the step with it; an exit action
       * per round, paid on every answer too, costs more than that.)
       */
      abortStep: enqueueActions(({ event, enqueue }, { step }: { step: StepName }) => {
        if (event.type !== `${step}.done` && event.type !== `${step}.error`) enqueue.sendTo(build.childId("steps"), { type: "step.abort", step });
      }),
      announceTermination: emit(({ context }) => ({
        type: "loop.terminated" as const,
        ...base(context),
        status: context.loop.termination ? ("failed" as const) : ("succeeded" as const),
        ...(context.loop.termination ? { reason: context.loop.termination.reason } : {}),
        rounds: read<number>(context, "rounds"),
        usage: read<Usage>(context, "usage"),
        ...unreportedField(context.loop.spend),
      })),
    }),
    guards: defineGuards({
      /** A user command fits its schema (machines/contract/commands.ts); anything else is refused, not applied. */
      wellFormedCommand: ({ event }) =>
        (event.type !== "agent.cancel" && event.type !== "guard.approve" && event.type !== "guard.reject") || commandShapeProblem(event) === undefined,
      isDone: ({ context }) => read<boolean>(context, "done") === true,
      /** The token or the cost budget (the config's, or a caller's grant) is spent. */
      budgetSpent: ({ context }) => spentBudget(config, context, read<Usage>(context, "usage")) !== undefined,
      /** The model call (or summary) was not made: its prompt alone would cross the token budget. */
      tokenBudgetRefused: ({ event }) => "error" in event && spendRefusal(event.error) === "tokenBudget",
      /** ...or the cost budget (or its model has no price). */
      costBudgetRefused: ({ event }) => "error" in event && spendRefusal(event.error) === "costBudget",
      iterationsLeft: ({ context }) => context.loop.iteration < config.maxIterations,
    }),
  };
}

/** `loop.terminated`'s `unreported`, when the run counted spending no server reported. */
function unreportedField(spend: AgentContext["loop"]["spend"]) {
  const unreported = unreportedSpend(spend);
  return unreported ? { unreported } : {};
}

/**
 * The tool providers live as long as the machine: started before the first model call, closed at
 * the end. An agent without providers has only its own tools, so its actor just says so
 * (`tools.ready`) and is needed no longer: it lives in Initialising alone, and an agent held
 * mid-run does not keep an idle child (about 3 KB each, measured with 300 held in bench/).
 * The event still comes after `start()` returns, so listeners attached then hear the first round.
 */
export function toolProvidersInvoke(build: ChartBuild, where: "root" | "Initialising"): AgentInvoke[] {
  if ((where === "root") !== build.registry.hasProviders) return [];
  return [{ id: build.childId("toolProviders"), src: "toolProviders", input: ({ context }) => ({ runId: context.loop.runId }) }];
}

/** What the root answers in any state: a cancel, a command nothing waits for, the tool providers failing; `on`: what other pieces add there. */
export function loopRootOn({ on }: { on: AgentOn }): AgentOn {
  return {
    "agent.cancel": [
      { guard: "wellFormedCommand", target: ".Failed", description: "Cancelled: the run fails (cancelled), whatever it was doing.", actions: { type: "terminate", params: { reason: "cancelled" } } },
      { actions: "refuseCommand" },
    ],
    ...on,
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
  };
}

/** The loop's states, and the parts of Evaluating and ChildRunning that are not their children. */
export function loopStates(build: ChartBuild, exits: { roundStart: string; done: string; finalResult: readonly DoneBranch<"llm">[] }) {
  const { config, access, target, read } = build;
  return {
    Initialising: stateConfig({
      description: "Waits for the tool providers to start (tools.ready) before the first round.",
      tags: [STATE_TAGS.stable, STATE_TAGS.startingTools],
      invoke: toolProvidersInvoke(build, "Initialising"),
      on: {
        "tools.ready": {
          // Sent by the toolProviders actor; a malformed one from outside is ignored.
          guard: ({ event }) => isToolList(event.tools),
          target: "Evaluating",
          description: "The providers' tools are known: the first iteration starts.",
          actions: assign({ loop: ({ context, event }) => ({ ...context.loop, tools: event.tools }) }),
        },
      },
    }),
    Evaluating: stateConfig({
      description: "One iteration: check the abort conditions, then run a round (model, tools, state check).",
      // A new iteration starts clean: step fields (actions) and the last batch's decisions go.
      entry: assign(({ context }) => ({
        state: access.reset(context.state, "step"),
        loop: { ...context.loop, decisions: [] },
      })),
      initial: "CheckAbort",
    }),
    CheckAbort: stateConfig({
      description: "Ends the run when the token or cost budget is spent (tokenBudget, costBudget); otherwise goes on to the round.",
      always: [
        // One transition for both budgets: either may come from the config or from a caller's grant (a nested agent), so the chart cannot tell at build time which a run has.
        {
          guard: "budgetSpent",
          target: target("Failed"),
          description: "The token or the cost budget is spent (or the cost is not known): the run fails (tokenBudget, or costBudget).",
          actions: { type: "terminate", params: ({ context }) => ({ reason: spentBudget(config, context, read<Usage>(context, "usage")) ?? "tokenBudget" }) },
        },
        { target: "ChildRunning", description: "Budget left: run the round." },
      ],
    }),
    ChildRunning: stateConfig({
      description: "A round: maybe prepare and compact, ask the model, run the tools it calls, then check the state.",
      initial: exits.roundStart,
    }),
    AgentLLM: stateConfig({
      description: "Asks the model for the next reply (streamed); tool calls go to ToolExecutor, a plain reply to StateCondition.",
      tags: [STATE_TAGS.stable, STATE_TAGS.checkpoint, STATE_TAGS.modelCall],
      // The step it asks the step host for (the viewer shows it as invoked here).
      meta: { asks: "llm" },
      entry: ["startReply", "requestReply"],
      // Only the parallel input guardrails' retry leaves mid-call for a state that is not final
      // (test/core/chart-knowledge.test.ts holds that): the call stops then.
      ...(build.features.parallelInput ? { exit: { type: "abortStep", params: { step: "llm" } } as const } : {}),
      on: {
        "llm.progress": { actions: "reportModelProgress" },
        "llm.done": [
          ...exits.finalResult,
          {
            guard: ({ event }) => event.output.toolCalls.length > 0,
            target: "ToolExecutor",
            description: "The reply calls tools: run them.",
            actions: "settleReply",
          },
          {
            target: "StateCondition",
            description: "A plain reply: check whether the run is done.",
            actions: "settleReply",
          },
        ],
        // The error carries no progress (the step flushed it before failing): settling first keeps every outcome alike.
        "llm.error": [
          ...budgetRefusals(build, "The call was not made"),
          {
            target: target("Failed"),
            description: "The model call failed for good: the run fails (modelError).",
            actions: ["reportModelProgress", { type: "terminate", params: { reason: "modelError" } }],
          },
        ],
        // A restored run: the request went with the process that saved it.
        "steps.ready": { actions: { type: "requestReply", params: { again: true } } },
      },
    }),
    StateCondition: stateConfig({
      description: "The round is over: done (state.done) succeeds (or checks the output), otherwise on to CheckBudget.",
      always: [
        { guard: "isDone", target: exits.done, description: "state.done: the run has its answer." },
        { target: target("CheckBudget"), description: "Not done: another iteration, if the budget allows." },
      ],
    }),
    CheckBudget: stateConfig({
      description: "Counts the iteration; past config.maxIterations the run fails (maxIterations), otherwise it retries.",
      entry: assign(({ context }) => ({ loop: { ...context.loop, iteration: context.loop.iteration + 1 } })),
      always: [
        { guard: "iterationsLeft", target: "Retry", description: "Iterations left: go again." },
        { target: "Failed", description: "config.maxIterations reached: the run fails (maxIterations).", actions: { type: "terminate", params: { reason: "maxIterations" } } },
      ],
    }),
    Retry: stateConfig({
      description: "Starts the next iteration.",
      always: { target: "Evaluating", description: "Starts the next iteration." },
    }),
    Succeeded: stateConfig({ type: "final", description: "The run ended with an answer.", tags: [STATE_TAGS.stable], entry: "announceTermination" }),
    Failed: stateConfig({ type: "final", description: "The run ended without an answer; loop.termination says why.", tags: [STATE_TAGS.stable], entry: ["countCutOffStep", "announceTermination"] }),
  };
}

/** The run's output, from its final context (`T`: the structured output's type, when there is one). */
export function runOutput<T>(build: ChartBuild, context: AgentContext): AgentOutput<T> {
  const output: AgentOutput<T> = { status: context.loop.termination ? "failed" : "succeeded", ...runOutputFields(context, build.access) };
  if (context.loop.termination) output.termination = context.loop.termination;
  const { outputPlan } = build;
  if (outputPlan && !context.loop.termination && context.loop.output?.status === "valid") output.output = outputPlan.value(context.loop.output.raw) as T;
  return output;
}

/**
 * On a model call's (or a summary's) error: it was not made because it would cross a budget. Both
 * branches are always there, like the budget checks of CheckAbort: a nested agent may get a token or
 * cost budget from its caller (a grant) without one of its own. `what` starts the description.
 */
export function budgetRefusals(build: ChartBuild, what: string) {
  const { target } = build;
  return [
    { guard: "tokenBudgetRefused", target: target("Failed"), description: `${what}: its prompt alone would cross the token budget (tokenBudget).`, actions: ["reportModelProgress", { type: "terminate", params: { reason: "tokenBudget" } }] } as const,
    { guard: "costBudgetRefused", target: target("Failed"), description: `${what}: it would cross the cost budget, or its model has no price (costBudget).`, actions: ["reportModelProgress", { type: "terminate", params: { reason: "costBudget" } }] } as const,
  ];
}
