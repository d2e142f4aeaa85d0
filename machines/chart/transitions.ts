import type { CallDecision, CallRecord, PreflightOutput } from "../../actors/guard.js";
import type { LLMOutput } from "../../actors/llm-step.js";
import { ai, toolMessage, type ToolCall } from "../../actors/messages.js";
import { addUsage, type Usage } from "../../actors/model-client.js";
import { pricedUsage, type Pricing } from "../../actors/pricing.js";
import type { ExecutorOutput } from "../../actors/tool-executor.js";
import type { AgentContext } from "../contract/context.js";
import type { StateAccess } from "../contract/state-access.js";
import { noteSpend, pastForkPoint } from "./spend.js";

/**
 * The pure context updates behind the machine's transitions. Kept apart from the statechart so
 * the chart reads as structure and each update can be tested on its own.
 */

/**
 * AgentLLM done: write actions, rounds + 1, done, finalAnswer, usage (priced by `pricing`); append the
 * assistant message (with the reply's reasoning items, which go back to the model that wrote them on
 * the next round); keep which of the client's targets answered (`loop.modelRoute`: sticky fallbacks
 * start there) and what budgets need beyond usage (machines/chart/spend.ts).
 */
export function applyReply(context: AgentContext, access: StateAccess, turn: LLMOutput, pricing?: Pricing): AgentContext {
  const rounds = access.read<number>(context.state, "rounds") + 1;
  // Some servers send empty ids; every call needs one so that its tool message can answer it.
  // Ids must also be unique within the reply: decisions, approvals and tool messages are keyed by
  // them, so a repeated id would let one call run on its twin's "allow".
  const seen = new Set<string>();
  const calls: ToolCall[] = turn.toolCalls.map((call, index) => {
    let id = call.id || `call_${rounds}_${index}`;
    while (seen.has(id)) id = `${id}_${index}`;
    seen.add(id);
    return id === call.id ? call : { ...call, id };
  });
  const done = calls.length === 0;
  let state = access.write(context.state, {
    actions: calls,
    rounds,
    done,
    finalAnswer: done ? turn.content || turn.refusal || "" : null,
    textOutput: turn.content,
    usage: addUsage(access.read<Usage>(context.state, "usage"), pricedUsage(turn.usage, pricing, turn.model, turn.serverModel)),
  });
  const message = ai(turn.content === "" ? null : turn.content, calls);
  if (turn.reasoningItems !== undefined) message.reasoningItems = turn.reasoningItems;
  state = access.append(state, "messages", [message]);
  const spend = noteSpend(context.loop.spend, turn);
  if (turn.route === undefined && spend === context.loop.spend) return { ...context, state };
  const loop = { ...context.loop, ...(turn.route !== undefined ? { modelRoute: turn.route } : {}), ...(spend !== undefined ? { spend } : {}) };
  return { ...context, state, loop };
}

/** Preflight done: keep each call's verdict for AwaitingApproval and Executing. */
export function applyDecisions(context: AgentContext, output: PreflightOutput): AgentContext {
  return { ...context, loop: { ...context.loop, decisions: output.decisions } };
}

/** Calls of the batch started: record them before any result exists (budgets and rate limits count them). */
export function recordStarted(context: AgentContext, started: readonly CallRecord[]): AgentContext {
  return { ...context, loop: { ...context.loop, history: [...context.loop.history, ...started] } };
}

/**
 * Executing done: one tool message per call, in call order; effect tags of the tools that ran
 * merge into toolEffects; a successful `returnDirect` tool ends the run with its output.
 */
export function applyOutcomes(context: AgentContext, access: StateAccess, output: ExecutorOutput): AgentContext {
  const messages = output.outcomes.map((outcome) =>
    toolMessage(outcome.callId, outcome.parts ?? outcome.content, { name: outcome.name, isError: outcome.status !== "ok" }),
  );
  let state = access.append(context.state, "messages", messages);
  const effects = new Set(access.read<string[]>(state, "toolEffects") ?? []);
  const before = effects.size;
  for (const outcome of output.outcomes) for (const tag of outcome.effectTags) effects.add(tag);
  if (effects.size !== before) state = access.write(state, { toolEffects: [...effects] });
  const direct = output.outcomes.find((outcome) => outcome.returnDirect && outcome.status === "ok");
  if (direct) state = access.write(state, { done: true, finalAnswer: direct.content });
  const spend = pastForkPoint(context.loop.spend);
  return spend === context.loop.spend ? { ...context, state } : { ...context, state, loop: { ...context.loop, spend } };
}

/** The approval timer fired: pending calls past their deadline are rejected. */
export function expireApprovals(context: AgentContext, firedAt: number): AgentContext {
  const decisions = context.loop.decisions.map(
    (d): CallDecision =>
      d.status === "pending" && d.deadline !== undefined && d.deadline <= firedAt
        ? { ...d, status: "rejected", reason: "no approval arrived before the deadline" }
        : d,
  );
  return { ...context, loop: { ...context.loop, decisions } };
}

export function decideCall(context: AgentContext, callId: string, change: Partial<CallDecision>): AgentContext {
  return {
    ...context,
    loop: { ...context.loop, decisions: context.loop.decisions.map((d) => (d.callId === callId ? { ...d, ...change } : d)) },
  };
}
