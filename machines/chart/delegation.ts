import { toErrorInfo } from "../../actors/errors.js";
import type { CallDecision } from "../../actors/guard.js";
import { mayRun, planCall } from "../../actors/call-plan.js";
import type { Message, ToolCall } from "../../actors/messages.js";
import { failedOutcome, truncateOutput, type ToolErrorKind, type ToolOutcome } from "../../actors/tool-outcome.js";
import type { Tool } from "../../tools/tool.js";
import type { AgentToolSpec } from "./agent-tool-spec.js";
import type { PendingApproval } from "../contract/approvals.js";
import type { AgentContext, AgentInput, AgentOutput } from "../contract/context.js";
import type { AgentEmitted, AgentPath, ApproveEvent, RejectEvent, Termination } from "../contract/events.js";
import type { StateAccess } from "../contract/state-access.js";
import { errorTermination } from "../contract/termination.js";
import type { Delegation, RunningAgent } from "../contract/loop-delegation.js";
import { applyOutcomes } from "./transitions.js";

/**
 * The pure context updates behind the Delegating and HandingOff states: the calls of a batch that
 * go to nested agents (agentTool, handoff), the one running now, the calls it waits on. Kept in
 * context (plain JSON) so a run saved while a nested agent works restores to exactly this point;
 * the nested agent itself is a child actor persisted inside this agent's snapshot.
 */

export type AgentTools = ReadonlyMap<string, { tool: Tool; spec: AgentToolSpec }>;

/** The calls of the batch that go to nested agents: agent tools and handoffs that may run. */
export function delegatedCalls(calls: readonly ToolCall[], decisions: readonly CallDecision[], agents: AgentTools): ToolCall[] {
  if (agents.size === 0) return [];
  const byId = new Map(decisions.map((d) => [d.callId, d]));
  return calls.filter((call) => agents.has(call.name) && mayRun(byId.get(call.id)));
}

/** The calls the tool executor runs: all but the delegated ones (denied agent calls get their observation there). */
export function executorCalls(calls: ToolCall[], decisions: readonly CallDecision[], agents: AgentTools): ToolCall[] {
  const delegated = delegatedCalls(calls, decisions, agents);
  return delegated.length === 0 ? calls : calls.filter((call) => !delegated.includes(call));
}

/** A failed agent call: `threw` unless said otherwise (the observation is rendered by `failedOutcome`). */
const errorOutcome = (call: ToolCall, message: string, errorKind: ToolErrorKind = "threw", durationMs?: number): ToolOutcome =>
  failedOutcome(call, errorKind, message, durationMs);

/** Executing done with delegated calls: keep the executor's outcomes and queue the nested agents. */
export function planDelegation(context: AgentContext, calls: readonly ToolCall[], agents: AgentTools, outcomes: readonly ToolOutcome[]): AgentContext {
  const delegated = delegatedCalls(calls, context.loop.decisions, agents);
  const handoffs = delegated.filter((call) => agents.get(call.name)!.spec.kind === "handoff");
  const [handoff, ...extra] = handoffs;
  const delegation: Delegation = {
    outcomes: [
      ...outcomes,
      ...extra.map((call) => errorOutcome(call, `only one handoff per reply is taken; the conversation goes to ${handoff!.name}`)),
    ],
    queue: delegated.filter((call) => agents.get(call.name)!.spec.kind === "agent"),
    handoff: handoff ?? null,
    current: null,
    pending: [],
    moment: null,
  };
  return { ...context, loop: { ...context.loop, delegation } };
}

/** A nested agent's run id: derived from this run's, so a run restarted from an earlier checkpoint finds its journal again. */
function nestedRunId(context: AgentContext, callId: string): string | undefined {
  const id = `${context.loop.runId}/${context.loop.iteration}/${callId}`;
  return id.length <= 200 ? id : undefined;
}

export interface NestedStart {
  call: ToolCall;
  /** `agent.<tool name>`: the actor logic it runs as. */
  src: string;
  input: AgentInput;
}

export interface StartStep {
  context: AgentContext;
  start?: NestedStart;
  /** Calls that could not start (bad arguments, a throwing `toInput`): their outcome is final. */
  failed: ToolOutcome[];
}

/** Take the next queued agent call whose arguments fit; the others get an error observation. */
export function startNextAgent(context: AgentContext, agents: AgentTools, now: number): StartStep {
  const delegation = context.loop.delegation;
  if (!delegation || delegation.current || delegation.queue.length === 0) return { context, failed: [] };
  const queue = [...delegation.queue];
  const failed: ToolOutcome[] = [];
  let start: NestedStart | undefined;
  let running: RunningAgent | null = null;
  while (!start && queue.length > 0) {
    const call = queue.shift()!;
    const { tool, spec } = agents.get(call.name)!;
    const decision = context.loop.decisions.find((d) => d.callId === call.id);
    // The executor's own checks of the arguments (the call is one of this agent's tools, allowed or approved).
    // Like any other tool, an agent tool the round's plan did not offer is an unknown tool.
    const offered = context.loop.round?.tools;
    const plan = planCall({ call, decision, offered, lookup: (name) => (name === call.name ? tool : undefined), toolNames: () => [call.name] });
    if (plan.kind !== "run") {
      failed.push(plan.kind === "refuse" ? errorOutcome(call, plan.message, plan.errorKind, 0) : plan.outcome);
      continue;
    }
    let input: AgentInput;
    try {
      input = spec.input(plan.args);
    } catch (error) {
      failed.push(errorOutcome(call, `${call.name} could not build the agent's input: ${toErrorInfo(error).message}`, "threw", 0));
      continue;
    }
    const runId = input.runId ?? nestedRunId(context, call.id);
    start = { call, src: nestedAgentSrc(call.name), input: { ...input, ...(runId !== undefined ? { runId } : {}) } };
    running = { callId: call.id, name: call.name, arguments: plan.arguments, agent: spec.machine.id, kind: "agent", startedAt: now, carried: 0 };
  }
  return {
    context: { ...context, loop: { ...context.loop, delegation: { ...delegation, queue, current: running, outcomes: [...delegation.outcomes, ...failed] } } },
    failed,
    ...(start ? { start } : {}),
  };
}

/** Actor logic name of an agent tool's machine inside the calling agent: `agent.<tool name>`. */
export function nestedAgentSrc(toolName: string): string {
  return `agent.${toolName}`;
}

/** The running agent call ended: its outcome joins the batch's. */
export function finishAgentCall(context: AgentContext, agents: AgentTools, ended: { output: AgentOutput } | { error: unknown }, now: number, maxChars: number): { context: AgentContext; outcome?: ToolOutcome } {
  const delegation = context.loop.delegation;
  const current = delegation?.current;
  if (!delegation || !current) return { context };
  const call: ToolCall = { id: current.callId, name: current.name, arguments: current.arguments };
  const durationMs = now - current.startedAt;
  let outcome: ToolOutcome;
  if ("error" in ended) {
    outcome = errorOutcome(call, truncateOutput(`the ${current.agent} agent crashed: ${toErrorInfo(ended.error).message}`, maxChars), "threw", durationMs);
  } else if (ended.output.status !== "succeeded") {
    const termination = ended.output.termination;
    const why = termination ? `${termination.reason}${termination.error ? `: ${termination.error.message}` : termination.detail ? `: ${termination.detail}` : ""}` : "unknown reason";
    outcome = errorOutcome(call, truncateOutput(`the ${current.agent} agent failed (${why})`, maxChars), "threw", durationMs);
  } else {
    let content: string;
    try {
      content = agents.get(current.name)!.spec.result(ended.output);
    } catch (error) {
      outcome = errorOutcome(call, `${current.name} could not read the agent's answer: ${toErrorInfo(error).message}`, "threw", durationMs);
      return { context: settle(context, delegation, outcome), outcome };
    }
    outcome = { callId: call.id, name: call.name, status: "ok", content: truncateOutput(content, maxChars), durationMs, effectTags: [] };
  }
  return { context: settle(context, delegation, outcome), outcome };
}

function settle(context: AgentContext, delegation: Delegation, outcome: ToolOutcome): AgentContext {
  return {
    ...context,
    loop: { ...context.loop, delegation: { ...delegation, current: null, pending: [], moment: null, outcomes: [...delegation.outcomes, outcome] } },
  };
}

/** The batch's outcomes in call order (every call of the batch has exactly one). */
function inCallOrder(outcomes: readonly ToolOutcome[], calls: readonly ToolCall[]): ToolOutcome[] {
  const order = new Map(calls.map((call, index) => [call.id, index]));
  return [...outcomes].sort((a, b) => (order.get(a.callId) ?? 0) - (order.get(b.callId) ?? 0));
}

/** Every agent call ended: the batch's observations join the conversation, as after Executing. */
export function applyDelegated(context: AgentContext, access: StateAccess): AgentContext {
  const delegation = context.loop.delegation;
  if (!delegation) return context;
  const calls = access.read<ToolCall[]>(context.state, "actions");
  const { delegation: _done, ...loop } = context.loop;
  return applyOutcomes({ ...context, loop }, access, { outcomes: inCallOrder(delegation.outcomes, calls) });
}

/** Entering HandingOff: answer the batch (the handoff call included), then start the target with the whole conversation. */
export function startHandoff(context: AgentContext, access: StateAccess, agents: AgentTools, now: number): { context: AgentContext; start?: NestedStart } {
  const delegation = context.loop.delegation;
  const call = delegation?.handoff;
  if (!delegation || !call || delegation.current) return { context };
  const { spec } = agents.get(call.name)!;
  const target = spec.machine.id;
  const transferred: ToolOutcome = { callId: call.id, name: call.name, status: "ok", content: `Transferred to ${target}: it answers from here on.`, effectTags: [] };
  const calls = access.read<ToolCall[]>(context.state, "actions");
  const answered = applyOutcomes(context, access, { outcomes: inCallOrder([...delegation.outcomes, transferred], calls) });
  const messages = access.read<Message[]>(answered.state, "messages");
  const runId = nestedRunId(context, call.id);
  const running: RunningAgent = { callId: call.id, name: call.name, arguments: call.arguments, agent: target, kind: "handoff", startedAt: now, carried: messages.length };
  return {
    context: { ...answered, loop: { ...answered.loop, delegation: { ...delegation, outcomes: [], handoff: null, current: running } } },
    start: { call, src: nestedAgentSrc(call.name), input: { messages, ...(runId !== undefined ? { runId } : {}) } },
  };
}

/** The handoff target finished: its messages join the conversation and its answer is the run's. */
export function finishHandoff(context: AgentContext, access: StateAccess, output: AgentOutput): AgentContext {
  const carried = context.loop.delegation?.current?.carried ?? 0;
  let state = access.append(context.state, "messages", output.messages.slice(carried));
  if (output.status === "succeeded") state = access.write(state, { done: true, finalAnswer: output.finalAnswer ?? "" });
  const { delegation: _done, ...loop } = context.loop;
  return { ...context, state, loop };
}

/** Why a run whose handoff target failed (`output`) or crashed (`error`) ends. */
export function handoffTermination(context: AgentContext, event: { output?: unknown; error?: unknown }): Termination {
  const target = context.loop.delegation?.current?.agent ?? "the handoff target";
  const output = event.output as Partial<AgentOutput> | undefined;
  if (output?.termination) {
    const t = output.termination;
    const why = `${t.reason}${t.error ? `: ${t.error.message}` : t.detail ? `: ${t.detail}` : ""}`;
    return errorTermination("handoffFailed", context.loop.iteration, t.error, `${target} failed (${why})`);
  }
  const error = event.error !== undefined ? toErrorInfo(event.error) : undefined;
  return errorTermination("handoffFailed", context.loop.iteration, error, `${target} ${error ? "crashed" : "ended without an answer"}`);
}

/** A nested agent's status: the calls it waits on, marked with this level of the path. */
export function mirrorStatus(context: AgentContext, pending: readonly PendingApproval[], moment: string | null): AgentContext {
  const delegation = context.loop.delegation;
  const current = delegation?.current;
  if (!delegation || !current) return context;
  const level = { agent: current.agent, callId: current.callId };
  const marked = pending.map((p) => ({ ...p, agentPath: [level, ...(p.agentPath ?? [])] }));
  return { ...context, loop: { ...context.loop, delegation: { ...delegation, pending: marked, moment: moment ?? delegation.moment } } };
}

/** A nested agent's telemetry event as this agent re-emits it: unchanged but for this level added to its path. */
export function relayed(context: AgentContext, event: AgentEmitted): AgentEmitted | undefined {
  const current = context.loop.delegation?.current;
  if (!current) return undefined;
  const agentPath: AgentPath = [{ agent: current.agent, callId: current.callId }, ...(event.agentPath ?? [])];
  return { ...event, agentPath };
}

/**
 * Where an approval or rejection sent to this agent goes: "own" for a call of its own batch,
 * `{ forward }` for one the nested agent waits on (the event to send it, one level of path less),
 * or `{ refused }` with the reason.
 */
export function routeCommand<E extends ApproveEvent | RejectEvent>(context: AgentContext, event: E): "own" | { forward: E } | { refused: string } {
  const delegation = context.loop.delegation;
  const path = event.agentPath;
  if (!path || path.length === 0) {
    if (context.loop.decisions.some((d) => d.callId === event.callId)) return "own";
    const match = delegation?.pending.find((p) => p.callId === event.callId);
    if (!match?.agentPath) return "own";
    return { forward: withPath(event, match.agentPath.slice(1)) };
  }
  const current = delegation?.current;
  const [head, ...rest] = path;
  if (!current || head!.agent !== current.agent || head!.callId !== current.callId) {
    return { refused: `no nested agent at ${JSON.stringify(head)} is waiting for approval${current ? ` (the running one is ${current.agent} for call ${current.callId})` : ""}` };
  }
  return { forward: withPath(event, rest) };
}

function withPath<E extends ApproveEvent | RejectEvent>(event: E, path: AgentPath): E {
  const { agentPath: _drop, ...rest } = event;
  return (path.length > 0 ? { ...rest, agentPath: path } : rest) as E;
}
