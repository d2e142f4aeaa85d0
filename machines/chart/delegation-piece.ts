import { assign, enqueueActions, type AnyStateMachine } from "xstate";
import type { ToolCall } from "../../actors/messages.js";
import { isSaneUsage, type Usage } from "../../actors/model-client.js";
import type { ToolOutcome } from "../../actors/tool-executor.js";
import { failureOf } from "../../actors/tool-outcome.js";
import { commandShapeProblem } from "../contract/commands.js";
import type { AgentOutput } from "../contract/context.js";
import { isNestedStatus } from "../contract/event-payloads.js";
import { STATE_TAGS } from "../contract/state-tags.js";
import { nothingWaits, type ApprovalHooks } from "./approval-piece.js";
import type { ChartBuild } from "./build.js";
import * as nested from "./delegation.js";
import { nestedAgentLogic } from "./nested-agent.js";
import { defineActions, defineGuards, stateConfig, type AgentOn, type AgentStateConfig, type DoneBranch } from "./piece.js";
import { addSpentUsage, addUnreported, leftOf, nestedUsage, withGrant } from "./spend.js";
import { recordStarted } from "./transitions.js";

/**
 * Nested agents (agentTool, handoff): the calls of a batch that go to another agent run one at a
 * time as the child `<name>.agent`, in `Delegating` (agent tools: the answer is the call's result)
 * and `HandingOff` (the target takes the conversation over). Their pure context updates are in
 * delegation.ts; the nested agent's logic is nested-agent.ts.
 */

export function delegationImplementation(build: ChartBuild) {
  const { name, config, now, access, agents, nestedId, read, base } = build;
  /** Spawn the nested agent by its logic name (`agent.<tool>`), provided by `withNestedAgents`; the typed spawn only knows setup's actors. */
  const spawnNested = (enqueue: { spawnChild: unknown }, src: string, input: unknown) =>
    (enqueue.spawnChild as (src: string, options: { id: string; input: unknown }) => void)(src, { id: nestedId, input });
  return {
    actions: defineActions({
      /** A nested agent's telemetry, re-emitted with this level added to its agentPath; its model usage counts here too. */
      relayNestedAgent: enqueueActions(({ context, event, enqueue }) => {
        if (event.type !== "agent.emitted" || event.from !== nestedId) return;
        const relayed = nested.relayed(context, event.event);
        if (!relayed) return;
        // Usage joins this run's usage (and so its checkpoints and budgets): replies and summaries, only
        // counts that are sane (a forged event's are not), priced here when the nested agent has no prices.
        if ((relayed.type === "reply.completed" || relayed.type === "context.compacted") && isSaneUsage(relayed.usage)) {
          const model = relayed.type === "reply.completed" ? relayed.model : undefined;
          enqueue.assign(addSpentUsage(context, access, nestedUsage(relayed.usage, config.pricing, model)));
        }
        // What the nested agent counted beyond its usage (its own nested agents' included) counts here too, once: from its own end.
        if (relayed.type === "loop.terminated" && relayed.unreported && event.event.agentPath === undefined) {
          enqueue.assign({ loop: { ...context.loop, spend: addUnreported(context.loop.spend, relayed.unreported) } });
        }
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
        spawnNested(enqueue, src, withGrant(input, leftOf(config, context, read<Usage>(context, "usage"))));
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
        spawnNested(enqueue, src, withGrant(input, leftOf(config, context, read<Usage>(context, "usage"))));
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
    }),
    guards: defineGuards({
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
    }),
  };
}

/** What nested agents add to the other pieces' states; nothing for an agent without agent tools or handoffs. */
export interface DelegationHooks {
  /** On the root: a nested agent's telemetry, whatever state the batch is in. */
  relay: AgentOn;
  /** On Executing's outcome: a batch with agent calls goes to the nested agents first. */
  afterBatch: readonly DoneBranch<"toolExecutor">[];
  /** In AwaitingApproval: back to the nested agent once its calls are decided, commands routed down, its status followed. */
  approval: ApprovalHooks;
  /** On leaving the batch (done, cancelled, failed): stop a nested agent still running. */
  exitBatch: AgentStateConfig["exit"];
}

export function delegationHooks(build: ChartBuild): DelegationHooks {
  const { delegates, handsOff, nestedAgents } = build.features;
  if (!nestedAgents) return { relay: {}, afterBatch: [], approval: { resume: [], commands: [], on: {} }, exitBatch: [] };
  return {
    relay: { "agent.emitted": { actions: "relayNestedAgent" } },
    afterBatch: [
      {
        guard: "delegationPlanned",
        target: delegates ? "Delegating" : "HandingOff",
        description: "The batch holds agent tools or a handoff: run them as nested agents.",
        actions: ["reportToolProgress", "planDelegation"],
      },
    ],
    approval: {
      resume: [
        ...(delegates ? [{ guard: "backToDelegating", target: "Delegating", description: "The nested agent's calls are decided: back to it." } as const] : []),
        ...(handsOff ? [{ guard: "backToHandingOff", target: "HandingOff", description: "The handoff target's calls are decided: back to it." } as const] : []),
      ],
      commands: [{ guard: "forNestedAgent", actions: "forwardToNestedAgent" }],
      on: { "agent.status": { actions: "mirrorNestedAgent" } },
    },
    exitBatch: ["stopNestedAgent"],
  };
}

/**
 * Delegating and HandingOff, each only with its kind of tool. Typed as `object`: these optional
 * states do not change the chart's inferred state value type (agents without them keep theirs).
 */
export function delegationStates(build: ChartBuild): object {
  const { target, nestedId } = build;
  const { delegates, handsOff } = build.features;
  const waiting = () =>
    [
      { guard: "nestedWaiting", target: "AwaitingApproval", description: "The nested agent waits for approval: so does this run.", actions: "mirrorNestedAgent" },
      { actions: "mirrorNestedAgent" },
    ] as const;
  return {
    ...(delegates
      ? {
          Delegating: stateConfig({
            description: "Runs the batch's agent tools one at a time, each as a nested agent whose answer is the call's result.",
            tags: [STATE_TAGS.stable, STATE_TAGS.checkpoint, STATE_TAGS.nestedAgent],
            entry: "startNestedAgent",
            always: [
              ...(handsOff ? [{ guard: "handoffNext", target: "HandingOff", description: "The agent tools are done and a handoff is queued: hand over." } as const] : []),
              {
                guard: "delegationDone",
                target: target("Evaluating.ChildRunning.StateCondition"),
                description: "Every agent tool has answered: their results join the conversation.",
                actions: "applyDelegated",
              },
            ],
            on: {
              "agent.status": waiting(),
              // Re-entering starts the next queued agent call, or leaves when there is none.
              [`xstate.done.actor.${nestedId}`]: { target: "Delegating", reenter: true, description: "The agent tool answered: record it, start the next.", actions: "finishNestedAgent" },
              [`xstate.error.actor.${nestedId}`]: { target: "Delegating", reenter: true, description: "The agent tool crashed: record the failure, start the next.", actions: "finishNestedAgent" },
            },
          }),
        }
      : {}),
    // A handoff: the target agent takes the conversation over and its answer is this run's.
    ...(handsOff
      ? {
          HandingOff: stateConfig({
            description: "Hands the conversation over to another agent; its answer becomes this run's.",
            tags: [STATE_TAGS.stable, STATE_TAGS.checkpoint, STATE_TAGS.nestedAgent],
            entry: "startHandoff",
            on: {
              "agent.status": waiting(),
              [`xstate.done.actor.${nestedId}`]: [
                { guard: "handoffSucceeded", target: target("Evaluating.ChildRunning.StateCondition"), description: "The target answered: its answer is this run's.", actions: "finishHandoff" },
                { target: target("Failed"), description: "The target failed: the run fails (handoffFailed).", actions: ["failHandoff", "finishHandoff"] },
              ],
              [`xstate.error.actor.${nestedId}`]: { target: target("Failed"), description: "The target crashed: the run fails (handoffFailed).", actions: ["failHandoff", "finishHandoff"] },
            },
          }),
        }
      : {}),
  };
}

/** Each agent tool's machine, as the logic of the nested agent that runs it (spawned by name, so persisted snapshots restore it). */
export function withNestedAgents<M extends { provide(implementations: { actors: never }): M }>(chart: M, build: ChartBuild): M {
  if (build.agents.size === 0) return chart;
  const actors = Object.fromEntries([...build.agents].map(([tool, { spec }]) => [nested.nestedAgentSrc(tool), nestedAgentLogic(spec.machine as AnyStateMachine)]));
  return chart.provide({ actors: actors as never });
}
