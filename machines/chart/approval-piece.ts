import { assign, enqueueActions } from "xstate";
import { createApprovalTimerActor } from "../../actors/approval-timer.js";
import type { CallDecision } from "../../actors/guard.js";
import { toolsOwnerOf } from "../../actors/tool-providers.js";
import type { Tool } from "../../tools/tool.js";
import { commandShapeProblem, shownCallId } from "../contract/commands.js";
import type { AgentContext } from "../contract/context.js";
import type { ApproveEvent, RejectEvent } from "../contract/events.js";
import { STATE_TAGS } from "../contract/state-tags.js";
import type { ChartBuild } from "./build.js";
import { HeldCommands } from "./held-commands.js";
import { defineActions, defineGuards, stateConfig, when, type AgentOn, type Branch } from "./piece.js";
import { decideCall, expireApprovals } from "./transitions.js";

/**
 * Approvals: `AwaitingApproval`, where a batch waits for a person to approve (maybe with edited
 * arguments) or reject each pending call, or for its deadline (the invoked `approvalTimer`); and the
 * user commands `guard.approve` / `guard.reject`, checked before they touch context and refused with
 * a reason anywhere nothing waits for them. Its pure context updates are in transitions.ts.
 */

/** No call of this agent's batch waits for a person, nor any call of the nested agent it runs. */
export function nothingWaits(context: AgentContext): boolean {
  return !context.loop.decisions.some((d) => d.status === "pending") && !context.loop.delegation?.pending.length;
}

/** Why an approval or rejection cannot be applied; undefined when it can. */
function commandProblem(build: ChartBuild, context: AgentContext, event: ApproveEvent | RejectEvent, owner?: string): string | undefined {
  const decision = context.loop.decisions.find((d) => d.callId === event.callId);
  if (!decision) return `no call with id "${event.callId}" is waiting for approval`;
  if (decision.status !== "pending") return `call "${event.callId}" was already decided (${decision.status})`;
  if (event.type === "guard.approve" && event.args !== undefined) return editProblem(build, context, decision, event.args, owner);
  return undefined;
}

/** Check edited arguments against the tool's schema; undefined means they are fine. */
function editProblem(build: ChartBuild, context: AgentContext, decision: CallDecision, args: Record<string, unknown> | string, owner?: string): string | undefined {
  const toolset = build.registry.toolsetNow(context.loop.runId, owner);
  if (!toolset) return "the tools are still starting; send the approval again in a moment";
  return editedArgumentsProblem(toolset.get(decision.name), decision.name, args);
}

/**
 * Why edited arguments do not fit the tool (undefined when they do). Shared with jianmu/http, which
 * checks an edit before it goes to a run queue's inbox, so a refusal reads the same in and out of process.
 */
export function editedArgumentsProblem(tool: Pick<Tool, "validate"> | undefined, name: string, args: Record<string, unknown> | string): string | undefined {
  let parsed: unknown = args;
  if (typeof args === "string") {
    try {
      parsed = JSON.parse(args);
    } catch {
      return "the edited arguments are not valid JSON";
    }
  }
  if (!tool) return `there is no tool named "${name}" to validate the edited arguments against`;
  const checked = tool.validate(parsed);
  return checked.ok ? undefined : `the edited arguments do not fit ${name}: ${checked.error}`;
}

export function approvalImplementation(build: ChartBuild) {
  const { now, registry, base } = build;
  const heldCommands = new HeldCommands(registry);
  const providersOf = (self: object) => toolsOwnerOf(self, build.childId("toolProviders"));
  return {
    actors: { approvalTimer: createApprovalTimerActor(now) },
    actions: defineActions({
      /** guard.approve / guard.reject: apply it, or report why it changes nothing. */
      decideByCommand: enqueueActions(({ context, event, enqueue, self }) => {
        if (event.type !== "guard.approve" && event.type !== "guard.reject") return;
        // Checked before anything reads it: a malformed command never touches context.
        const shape = commandShapeProblem(event);
        // Restored while the providers start: an edit cannot be checked yet, so it waits for tools.ready.
        const owner = providersOf(self);
        if (shape === undefined && heldCommands.hold(self, context.loop.runId, event, owner)) return;
        const problem = shape ?? commandProblem(build, context, event, owner);
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
        const reason = commandShapeProblem(event) ?? commandProblem(build, context, event, providersOf(self)) ?? `call "${event.callId}" is not waiting for approval`;
        enqueue.emit({ type: "guard.approval.refused", ...base(context), callId: shownCallId(event), reason });
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
    }),
    guards: defineGuards({
      nonePending: ({ context }) => nothingWaits(context),
    }),
  };
}

/** What other pieces add to AwaitingApproval: where to go back to, commands they route, events they follow. */
export interface ApprovalHooks {
  /** Eventless branches tried before "every call decided: run them". */
  resume: readonly Branch[];
  /** Branches for `guard.approve` / `guard.reject` tried before the batch's own decision. */
  commands: readonly Branch[];
  /** Other events the waiting state follows. */
  on: AgentOn;
}

/**
 * AwaitingApproval, present only where a call can wait: a guard can ask for approval, or a nested
 * agent's guard can. Without either no state waits for approval.
 */
export function approvalStates(build: ChartBuild, { resume, commands, on }: ApprovalHooks) {
  const { target } = build;
  return when(build.features.approvals, {
    AwaitingApproval: stateConfig({
      description: "Waits for a person to approve (maybe with edited arguments) or reject each pending call, or for its deadline.",
      tags: [STATE_TAGS.stable, STATE_TAGS.checkpoint, STATE_TAGS.approval],
      always: [...resume, { guard: "nonePending", target: "Executing", description: "Every call is decided: run the approved ones." }],
      invoke: {
        id: build.childId("approvalTimer"),
        src: "approvalTimer",
        input: ({ context }) => {
          const deadlines = context.loop.decisions.flatMap((d) => (d.status === "pending" && d.deadline !== undefined ? [d.deadline] : []));
          return { deadline: deadlines.length > 0 ? Math.min(...deadlines) : null };
        },
        onDone: [
          {
            guard: ({ context, event }) =>
              context.loop.decisions.some((d) => d.status === "pending" && d.onTimeout === "fail" && d.deadline !== undefined && d.deadline <= event.output.firedAt),
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
      on: {
        "guard.approve": [...commands, { actions: "decideByCommand" }],
        "guard.reject": [...commands, { actions: "decideByCommand" }],
        ...on,
        // After a restore the providers start while the run waits here: apply what was held. Without
        // providers nothing is ever held (the tools are known at once), so nothing waits for this.
        ...(build.registry.hasProviders ? { "tools.ready": { actions: "releaseHeldCommands" } } : {}),
      },
    }),
  });
}
