import type { CallDecision } from "../actors/guard.js";
import type { LLMProgress } from "../actors/llm-step.js";
import type { Usage } from "../actors/model-client.js";
import type { Progress } from "../actors/progress.js";
import type { ToolErrorKind, ToolProgress } from "../actors/tool-executor.js";
import type { ToolsLifecycleEvent } from "../actors/tool-providers.js";
import type { PendingApproval } from "./approvals.js";
import type { TerminationReason } from "./termination.js";

export type { ErrorInfo } from "../actors/errors.js";
export { toErrorInfo } from "../actors/errors.js";

// ---- Where a nested agent sits ------------------------------------------------------------------

/**
 * The way from the top agent down to a nested one (an `agentTool` or `handoff` target), outermost
 * first: one entry per level below the top. `agent` is the nested agent's machine name, `callId` the
 * id of the tool call in the level above that started it. Telemetry of nested agents is re-emitted by
 * each parent with this path; events of the top agent carry none.
 */
// The schema lives with the commands that carry it (guard.approve / guard.reject to a nested call).
import type { AgentPath } from "./commands.js";
export { AgentPathSchema, type AgentPath } from "./commands.js";

// ---- Events users send to a running agent ----------------------------------------------------

// Their shapes are zod schemas (machines/commands.ts): the machine parses each one before use.
import type { ApproveEvent, CancelEvent, RejectEvent } from "./commands.js";
export type { ApproveEvent, CancelEvent, RejectEvent } from "./commands.js";
export type AgentCommand = ApproveEvent | RejectEvent | CancelEvent;

// ---- Events the agent's own actors send it -------------------------------------------------

export type InternalEvent =
  | { type: "llm.progress"; progress: Progress<LLMProgress>[] }
  | { type: "tool.progress"; progress: Progress<ToolProgress>[] }
  | ToolsLifecycleEvent
  | NestedAgentEvent;

/**
 * What a nested agent (see machines/nested-agent.ts) tells the agent that started it: each telemetry
 * event it emits, and where it stands (the calls it waits on, its checkpoint moment) when that changes.
 */
export type NestedAgentEvent =
  | { type: "agent.emitted"; from: string; event: AgentEmitted }
  | { type: "agent.status"; from: string; pending: PendingApproval[]; moment: string | null };

export type AgentEvent = AgentCommand | InternalEvent;

// ---- Telemetry: what the agent emits (observe with actor.on(type, handler)) ----------------------

/** Carried by every emitted event. Never carries keys, headers or the prompt. */
export interface EmittedBase {
  agent: string;
  runId: string;
  iteration: number;
  /** Epoch milliseconds. */
  timestamp: number;
  /** Present on events re-emitted from a nested agent: where it sits (see AgentPathSchema). */
  agentPath?: AgentPath;
}

export { TERMINATION_REASONS, type Termination, type TerminationReason } from "./termination.js";

type Emit<T extends string, P> = EmittedBase & { type: T } & P;

export type AgentEmitted =
  | Emit<"reply.started", { round: number }>
  | Emit<"model.call.started", { attempt: number; model: string; endpoint: string }>
  | Emit<"text.delta", { delta: string }>
  | Emit<"model.call.completed", { attempt: number; model: string; endpoint: string; usage: Usage; finishReason: string | null; durationMs: number }>
  | Emit<"model.call.failed", { attempt: number; model: string; endpoint: string; status?: number; message: string; willRetry: boolean; durationMs: number }>
  | Emit<"reply.completed", { round: number; toolCalls: number; finishReason: string | null; usage: Usage; model: string }>
  | Emit<"tool.call.started", { callId: string; name: string; arguments: string }>
  | Emit<"tool.call.completed", { callId: string; name: string; durationMs: number; output: string }>
  | Emit<"tool.call.failed", { callId: string; name: string; durationMs: number; error: string; errorKind: ToolErrorKind }>
  | Emit<"tool.call.denied", { callId: string; name: string; reason: string; decision: Extract<CallDecision["status"], "denied" | "rejected"> }>
  | Emit<"guard.approval.requested", { callId: string; name: string; arguments: string; reason?: string; deadline?: number }>
  | Emit<"guard.approval.decided", { callId: string; name: string; decision: "approved" | "rejected"; edited: boolean; reason?: string }>
  | Emit<"guard.approval.refused", { callId: string; reason: string }>
  /** A command that does not fit its shape (e.g. `agent.cancel` with a `reason` that is not text): nothing changed. */
  | Emit<"agent.command.refused", { command: string; reason: string }>
  | Emit<"output.partial", { partial: unknown }>
  | Emit<"output.invalid", { error: string; failures: number }>
  | Emit<"context.compacted", { strategy: "trim" | "summarize"; before: { messages: number; tokens: number }; after: { messages: number; tokens: number }; usage: Usage }>
  | Emit<"loop.terminated", { status: "succeeded" | "failed"; reason?: TerminationReason; rounds: number; usage: Usage }>
  | Emit<"agent.handoff", { callId: string; name: string; from: string; to: string; messages: number }>;

export type AgentEmittedType = AgentEmitted["type"];

export const EMITTED_TYPES: readonly AgentEmittedType[] = [
  "reply.started",
  "model.call.started",
  "text.delta",
  "model.call.completed",
  "model.call.failed",
  "reply.completed",
  "tool.call.started",
  "tool.call.completed",
  "tool.call.failed",
  "tool.call.denied",
  "guard.approval.requested",
  "guard.approval.decided",
  "guard.approval.refused",
  "agent.command.refused",
  "output.partial",
  "output.invalid",
  "context.compacted",
  "loop.terminated",
  "agent.handoff",
];
