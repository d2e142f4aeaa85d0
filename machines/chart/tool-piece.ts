import { assign, enqueueActions, sendTo } from "xstate";
import { createPreflightActor, type CallDecision, type CallRecord } from "../../actors/guard.js";
import type { ToolCall } from "../../actors/messages.js";
import { createToolExecutorActor, type ExecutorOutput, type ToolProgress } from "../../actors/tool-executor.js";
import { toolsOwnerOf } from "../../actors/tool-providers.js";
import type { AgentContext } from "../contract/context.js";
import { isStartedCall } from "../contract/event-payloads.js";
import type { AgentEmitted, AgentEvent } from "../contract/events.js";
import { STATE_TAGS } from "../contract/state-tags.js";
import type { ChartBuild } from "./build.js";
import { executorCalls } from "./delegation.js";
import { defineActions, stateConfig, type DoneBranch } from "./piece.js";
import { heard } from "./audience.js";
import { carriedProgress } from "./progress.js";
import { applyDecisions, applyOutcomes, recordStarted } from "./transitions.js";
import { stepLogic } from "./steps.js";

/**
 * Tool execution: the batch of calls of one reply (`ToolExecutor`), checked by the guards in
 * `Preflight` (the invoked `guard`) and run in `Executing` (the invoked `toolExecutor`). Its pure
 * context updates are in transitions.ts. Approvals (approval-piece.ts) and nested agents
 * (delegation-piece.ts) add their states to the batch.
 */

export function toolImplementation(build: ChartBuild) {
  const { options, now, registry, toolOwners, read, base, access, config, agents } = build;

  /**
   * A batch of tool progress (carried by `event`, if any): its telemetry goes to `emitEvent` when the run
   * is heard (audience.ts); returns the context with the started calls in the history (the same
   * context when none started).
   */
  const settleToolProgress = (context: AgentContext, event: AgentEvent, listened: boolean, emitEvent: (event: AgentEmitted) => void): AgentContext => {
    const progress = carriedProgress<ToolProgress>(event);
    if (!progress) return context;
    const started: CallRecord[] = [];
    for (const { at, event: item } of progress) {
      if (item.type === "tool.call.started" && isStartedCall(item, at)) started.push({ callId: item.callId, name: item.name, at });
      if (listened) emitEvent(Object.assign({}, item, base(context, at)));
    }
    return started.length > 0 ? recordStarted(context, started) : context;
  };
  return {
    actors: {
      guard: createPreflightActor(options.constraints ?? [], now),
      toolExecutor: createToolExecutorActor({
        toolset: (runId, owner) => registry.toolset(runId, owner),
        toolsetNow: (runId, owner) => registry.toolsetNow(runId, owner),
        owners: toolOwners,
        ...(options.toolRunner ? { runner: options.toolRunner } : {}),
        ...(options.journal ? { journal: options.journal } : {}),
        now,
      }),
    },
    actions: defineActions({
      /** Tool progress becomes telemetry; started calls join the history that budgets and rate limits read. */
      reportToolProgress: enqueueActions(({ context, event, enqueue, self }) => {
        const settled = settleToolProgress(context, event, heard(self), enqueue.emit);
        if (settled !== context) enqueue.assign(settled);
      }),
      /**
       * Executing's batch settles: its last progress and its outcomes joining the conversation, as
       * `reportToolProgress` and the outcomes' assign in a row would, in one action with one assign
       * (each action is an interpreter step per round, bench/counts.mjs).
       */
      settleOutcomes: enqueueActions(({ context, event, enqueue, self }) => {
        const settled = settleToolProgress(context, event, heard(self), enqueue.emit);
        enqueue.assign(applyOutcomes(settled, access, (event as unknown as { output: ExecutorOutput }).output));
      }),
      /** Executing asks the step host to run the batch. */
      requestBatch: sendTo(build.childId("steps"), ({ context, self }, params?: { again: true }) => ({
        type: "step.request",
        step: "toolExecutor",
        input: toolOwners.mark(
          {
            runId: context.loop.runId,
            iteration: context.loop.iteration,
            calls: executorCalls(read<ToolCall[]>(context, "actions"), context.loop.decisions, agents),
            decisions: context.loop.decisions,
            mode: config.toolExecution,
            state: build.view(context),
            maxOutputChars: config.maxToolOutputChars,
            ...(context.loop.round?.tools ? { offered: context.loop.round.tools } : {}),
          },
          toolsOwnerOf(self, build.childId("toolProviders")),
        ),
        logic: stepLogic(self, "toolExecutor"),
        ...params,
      })),
      /** Preflight without constraints: the decisions the guard actor gives when no guard runs. */
      allowEveryCall: assign(({ context }) =>
        applyDecisions(context, { decisions: read<ToolCall[]>(context, "actions").map((call): CallDecision => ({ callId: call.id, name: call.name, status: "allowed" })) }),
      ),
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
    }),
  };
}

/** The batch's states: Preflight and Executing (`afterBatch`: branches taken before the outcomes are applied). */
export function toolStates(build: ChartBuild, { afterBatch }: { afterBatch: readonly DoneBranch<"toolExecutor">[] }) {
  const { target, read } = build;
  return {
    ToolExecutor: stateConfig({
      description: "The batch of tool calls of one reply: guards, approvals, execution, nested agents.",
      initial: "Preflight",
    }),
    // Without constraints nothing can deny or hold a call: Preflight allows the batch in an action,
    // with the decisions, events (none) and context the guard actor would give, and no actor per round.
    Preflight: !build.features.constraints
      ? stateConfig({
          description: "No constraints: every call of the batch is allowed at once (no guard actor runs).",
          always: { target: "Executing", description: "Every call is allowed: run them.", actions: "allowEveryCall" },
        })
      : stateConfig({
          description: "Runs the guards on every call of the batch: each is allowed, denied or waits for approval.",
          tags: [STATE_TAGS.stable],
          invoke: {
            id: build.childId("guard"),
            src: "guard",
            input: ({ context }) => ({
              calls: read<ToolCall[]>(context, "actions"),
              tools: context.loop.tools,
              state: build.view(context),
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
        }),
    Executing: stateConfig({
      description: "Runs the approved calls (in parallel or in sequence, as config.toolExecution says) and records their outcomes.",
      tags: [STATE_TAGS.stable, STATE_TAGS.checkpoint],
      // The step it asks the step host for (the viewer shows it as invoked here).
      meta: { asks: "toolExecutor" },
      entry: "requestBatch",
      // Left before its answer only for a final state (a cancel, a deadline, the providers failing),
      // which stops the step host and the batch with it, or, in the chart, for another try of the
      // parallel input guardrails: only then the batch stops on exit (test/core/chart-knowledge.test.ts).
      ...(build.features.parallelInput ? { exit: { type: "abortStep", params: { step: "toolExecutor" } } as const } : {}),
      on: {
        "tool.progress": { actions: "reportToolProgress" },
        "toolExecutor.done": [
          ...afterBatch,
          {
            target: target("Evaluating.ChildRunning.StateCondition"),
            description: "The batch's outcomes join the conversation: check whether the run is done.",
            actions: "settleOutcomes",
          },
        ],
        "toolExecutor.error": {
          target: target("Failed"),
          description: "The executor itself crashed (a tool's failure is an outcome, not this): the run fails (internalError).",
          actions: ["reportToolProgress", { type: "terminate", params: { reason: "internalError" } }],
        },
        // A restored run: the request went with the process that saved it.
        "steps.ready": { actions: { type: "requestBatch", params: { again: true } } },
      },
    }),
  };
}
