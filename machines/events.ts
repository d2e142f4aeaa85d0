import type { CallDecision } from "../actors/guard.js";
import type { LLMProgress } from "../actors/llm-step.js";
import type { Usage } from "../actors/model-client.js";
import type { Progress } from "../actors/progress.js";
import type { ToolErrorKind, ToolProgress } from "../actors/tool-executor.js";
import type { ErrorInfo } from "../actors/errors.js";
import type { ToolsLifecycleEvent } from "../actors/tool-providers.js";

export type { ErrorInfo } from "../actors/errors.js";
export { toErrorInfo } from "../actors/errors.js";

// ---- Events users send to a running agent ----------------------------------------------------

/** Approve a pending call; `args` (an object or JSON text) replaces the model's arguments after validation. */
export interface ApproveEvent {
  type: "guard.approve";
  callId: string;
  args?: Record<string, unknown> | string;
}
/** Reject a pending call; the model reads the reason. */
export interface RejectEvent {
  type: "guard.reject";
  callId: string;
  reason?: string;
}
/** Stop the run from any state; in-flight model and tool calls are aborted. */
export interface CancelEvent {
  type: "agent.cancel";
  reason?: string;
}
export type AgentCommand = ApproveEvent | RejectEvent | CancelEvent;

// ---- Events the agent's own actors send it -------------------------------------------------

export type InternalEvent =
  | { type: "llm.progress"; progress: Progress<LLMProgress>[] }
  | { type: "tool.progress"; progress: Progress<ToolProgress>[] }
  | ToolsLifecycleEvent;

export type AgentEvent = AgentCommand | InternalEvent;

// ---- Telemetry: what the agent emits (observe with actor.on(type, handler)) ----------------------

/** Carried by every emitted event. Never carries keys, headers or the prompt. */
export interface EmittedBase {
  agent: string;
  runId: string;
  iteration: number;
  /** Epoch milliseconds. */
  timestamp: number;
}

/** Why a failed run ended. The one list: types, schemas and checks derive from it. */
export const TERMINATION_REASONS = [
  "maxIterations",
  "tokenBudget",
  "modelError",
  "cancelled",
  "approvalTimeout",
  "toolProviderError",
  "internalError",
  "invalidOutput",
] as const;
export type TerminationReason = (typeof TERMINATION_REASONS)[number];

export interface Termination {
  reason: TerminationReason;
  /** Completed loop iterations when the run ended. */
  iterations: number;
  error?: ErrorInfo;
  /** Free text given with `agent.cancel`. */
  detail?: string;
  /** `invalidOutput`: the model's last final output, as it wrote it (`error` says what is wrong with it). */
  raw?: string;
}

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
  | Emit<"output.partial", { partial: unknown }>
  | Emit<"output.invalid", { error: string; failures: number }>
  | Emit<"context.compacted", { strategy: "trim" | "summarize"; before: { messages: number; tokens: number }; after: { messages: number; tokens: number }; usage: Usage }>
  | Emit<"loop.terminated", { status: "succeeded" | "failed"; reason?: TerminationReason; rounds: number; usage: Usage }>;

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
  "output.partial",
  "output.invalid",
  "context.compacted",
  "loop.terminated",
];
