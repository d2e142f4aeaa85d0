import type { LLMOutput, LLMProgress } from "../../actors/llm-step.js";
import type { Progress } from "../../actors/progress.js";
import type { ExecutorOutput, ToolProgress } from "../../actors/tool-executor.js";
import type { ToolsLifecycleEvent } from "../../actors/tool-providers.js";
import type { PendingApproval } from "./approvals.js";
import type { AgentEmitted } from "./emitted.js";

export type { ErrorInfo } from "../../actors/errors.js";
export { toErrorInfo } from "../../actors/errors.js";

// ---- Where a nested agent sits ------------------------------------------------------------------

/**
 * The way from the top agent down to a nested one (an `agentTool` or `handoff` target), outermost
 * first: one entry per level below the top. `agent` is the nested agent's machine name, `callId` the
 * id of the tool call in the level above that started it. Telemetry of nested agents is re-emitted by
 * each parent with this path; events of the top agent carry none.
 */
// The schema lives with the commands that carry it (guard.approve / guard.reject to a nested call).
export { AgentPathSchema, type AgentPath } from "./commands.js";

// ---- Events users send to a running agent ----------------------------------------------------

// Their shapes are zod schemas (machines/contract/commands.ts): the machine parses each one before use.
import type { ApproveEvent, CancelEvent, RejectEvent } from "./commands.js";
export type { ApproveEvent, CancelEvent, RejectEvent } from "./commands.js";
export type AgentCommand = ApproveEvent | RejectEvent | CancelEvent;

// ---- Events the agent's own actors send it -------------------------------------------------

export type InternalEvent =
  | { type: "llm.progress"; progress: Progress<LLMProgress>[] }
  | { type: "tool.progress"; progress: Progress<ToolProgress>[] }
  | ToolsLifecycleEvent
  | StepAnswer
  | NestedAgentEvent;

/**
 * What the step host (actors/step-host.ts) answers: a model call's reply (AgentLLM), a batch's
 * outcomes (Executing), either one's failure, and that it has started (a restored run asks again).
 */
export type StepAnswer =
  | { type: "llm.done"; output: LLMOutput }
  | { type: "llm.error"; error: unknown }
  | { type: "toolExecutor.done"; output: ExecutorOutput }
  | { type: "toolExecutor.error"; error: unknown }
  | { type: "steps.ready" };

/**
 * What a nested agent (see machines/chart/nested-agent.ts) tells the agent that started it: each telemetry
 * event it emits, and where it stands (the calls it waits on, its checkpoint moment) when that changes.
 */
export type NestedAgentEvent =
  | { type: "agent.emitted"; from: string; event: AgentEmitted }
  | { type: "agent.status"; from: string; pending: PendingApproval[]; moment: string | null };

export type AgentEvent = AgentCommand | InternalEvent;

// ---- Telemetry: what the agent emits (observe with actor.on(type, handler)) ----------------------

// One table of zod schemas (machines/contract/emitted.ts): the types and the list of names come from it.
export { agentEmittedSchema, EMITTED_EVENTS, EMITTED_TYPES } from "./emitted.js";
export type { AgentEmitted, AgentEmittedType, EmittedBase } from "./emitted.js";
export { TERMINATION_REASONS, type Termination, type TerminationReason } from "./termination.js";
