/**
 * jianmu: ReAct agents as explicit XState v5 statecharts.
 * The library's public surface; test doubles and model-based testing helpers live in `jianmu/testing`.
 */
import type { ModelClient as ModelClientShape } from "./actors/model-client.js";
import { resolveModelClient } from "./actors/openai/openai-model-client.js";

export { createReactMachine, ACTOR_NAMES, MachineOptionsError, reactConfigOf, toolProvidersClosed } from "./machines/react-machine.js";
export type { ReactMachine, ReactMachineOptions, ReactAgentRef } from "./machines/react-machine.js";
export { runAgent } from "./machines/runner.js";
export { pendingApprovals, PendingApprovalSchema } from "./machines/contract/approvals.js";
export { agentTool } from "./machines/composition/agent-tool.js";
export type { AgentToolOptions } from "./machines/composition/agent-tool.js";
export { handoff } from "./machines/composition/handoff.js";
export type { HandoffOptions } from "./machines/composition/handoff.js";
export type { ApprovalAnswer, ApprovalRequest, PendingApproval } from "./machines/contract/approvals.js";
export type { RunOptions, TracerLike } from "./machines/runner.js";
export { AgentInputError, AgentOutputSchema } from "./machines/contract/context.js";
export type { AgentContext, AgentInput, AgentOutput, LoopContext } from "./machines/contract/context.js";
export { ReActConfig, ConfigError, loadConfig, readConfigFile, ToolChoiceSchema } from "./machines/contract/config.js";
export type { ReActConfigInput, LoadConfigOptions, JianmuFile } from "./machines/contract/config.js";
export { ContextLimitSchema, OutputStrategySchema } from "./machines/contract/config.js";
export type { ContextLimit, OutputStrategy } from "./machines/contract/config.js";
export { FINAL_RESULT_TOOL } from "./machines/chart/output.js";
export { OutputCheckSchema } from "./machines/contract/output-check.js";
export type { OutputCheck } from "./machines/contract/output-check.js";
export { RoundPlanError } from "./machines/chart/prepare-round.js";
export { RoundPlanSchema } from "./machines/contract/round-plan.js";
export type { RoundPlan } from "./machines/contract/round-plan.js";
export type { PrepareRound, RoundView } from "./machines/chart/prepare-round.js";
export { compactableSpan, trimMessages, SUMMARY_PREFIX } from "./actors/compaction.js";
export type { CompactionInput, CompactionOutput, CompactionStrategy } from "./actors/compaction.js";
export {
  ReActState,
  REACT_FIELDS,
  StateKeysSchema,
  UsageSchema,
  appendField,
  fieldMeta,
  persistentField,
  runField,
  stateFields,
  stepField,
} from "./machines/contract/state.js";
export type { FieldMeta, Lifetime, ReActField, ReActStateShape, StateKeys, StateSchema } from "./machines/contract/state.js";
export { StateAccess, StateError } from "./machines/contract/state-access.js";
export type { HostState } from "./machines/contract/state-access.js";
export { EMITTED_TYPES, AgentPathSchema } from "./machines/contract/events.js";
export type {
  AgentCommand,
  AgentEmitted,
  AgentEmittedType,
  AgentEvent,
  AgentPath,
  NestedAgentEvent,
  ApproveEvent,
  CancelEvent,
  EmittedBase,
  ErrorInfo,
  RejectEvent,
  Termination,
  TerminationReason,
} from "./machines/contract/events.js";

export { ai, human, system, toolMessage, MessageSchema, ToolCallSchema, ContentPartSchema } from "./actors/messages.js";
export type { AssistantMessage, Message, SystemMessage, ToolCall, ToolMessage, UserMessage } from "./actors/messages.js";
export type { ContentPart, FilePart, ImagePart, MediaPart, PartsContent, TextPart } from "./actors/messages.js";
export { describeContent, textOf } from "./actors/content-parts.js";
export { toolContent, isToolContent } from "./actors/tool-content.js";
export type { ToolContent } from "./actors/tool-content.js";
export { ContentPartError, UNSUPPORTED_CONTENT, defaultAccepts } from "./actors/content-capabilities.js";
export type { Accepts, AcceptsOption } from "./actors/content-capabilities.js";
export { ModelError, ZERO_USAGE, addUsage } from "./actors/model-client.js";
export { JianmuError, isJianmuError } from "./tools/jianmu-error.js";
export type { ModelCallEvent, ModelCallOptions, ModelRequest, ModelTurn, ToolChoice, Usage } from "./actors/model-client.js";
export type { Cancellation } from "./actors/cancellation.js";
export { ResilienceSchema, FallbackSchema } from "./actors/resilience-config.js";
export type { Fallback, Resilience, ResilienceInput } from "./actors/resilience-config.js";
export { ReasoningItemsSchema, ReasoningItemSchema } from "./actors/reasoning-items.js";
export type { ReasoningItem, ReasoningItems } from "./actors/reasoning-items.js";
export { ModelApiSchema, ReasoningOptionsSchema } from "./actors/model-api.js";
export type { ModelApi, ReasoningOptions } from "./actors/model-api.js";
export { ModelRouteSchema } from "./actors/model-route.js";
export type { ModelRoute } from "./actors/model-route.js";
export { DEFAULT_PERSONA, REACT_PROTOCOL, defaultContextBuilder } from "./actors/context-builder.js";
export type { ContextBuilder, ContextInput } from "./actors/context-builder.js";
export { buildModelRequest, createLLMActor } from "./actors/llm-step.js";
export { fromReportingPromise, type ReportingPromiseArgs, type ReportingPromiseCreator } from "./actors/reporting-promise.js";
export { StepLogicError } from "./actors/step-host.js";
export type { LLMInput, LLMOutput } from "./actors/llm-step.js";
export { createPreflightActor, decide } from "./actors/guard.js";
export type { CallDecision, CallRecord, Guard, GuardCall, GuardContext, GuardDecision, PreflightInput, PreflightOutput } from "./actors/guard.js";
export { createToolExecutorActor } from "./actors/tool-executor.js";
export type { ExecutorInput, ExecutorOutput, ToolErrorKind, ToolOutcome, ToolProgress, ToolRunner } from "./actors/tool-executor.js";

export { defineTool, checkTool, ToolDefinitionError } from "./tools/tool.js";
export type { DeepReadonly, JsonSchema, Tool, ToolContext, ToolDefinition, ToolInfo } from "./tools/tool.js";
export { ToolSet } from "./tools/toolset.js";
export type { FunctionSchema } from "./tools/toolset.js";
export { ToolProviderError } from "./tools/provider.js";
export { OptionalPeerMissingError } from "./tools/optional-peer.js";
export type { ToolProvider } from "./tools/provider.js";

// ---- the real model client ----
/** A model endpoint the LLM step can call: `ModelClient.resolve({...})` builds one on the `openai` SDK. */
export type ModelClient = ModelClientShape;
export const ModelClient = { resolve: resolveModelClient } as const;
export { resolveModelClient };
export type { ModelClientOptions } from "./actors/openai/openai-model-client.js";
export { ModelClientOptionsError } from "./actors/openai/model-client-options.js";

// ---- guards ----
export { allowTools, denyTools, requireApproval, callBudget, rateLimit, GuardOptionsError } from "./actors/guards/index.js";
export type { ToolListOptions, RequireApprovalOptions, CallBudgetOptions, RateLimitOptions } from "./actors/guards/index.js";

// ---- guardrails (input and output checks) ----
export { defineGuardrail, GuardrailDefinitionError } from "./actors/guardrail.js";
/** What a judge's `ctx.budgeted` call may throw instead of calling: the budget refuses it, or the tool journal could not record it. */
export { SpendLimitError } from "./actors/spend.js";
export { JudgeCallNotRecordedError } from "./actors/judge-call-log.js";
export type { Guardrail, GuardrailContext, GuardrailMode, GuardrailStage, GuardrailSubject, GuardrailVerdict } from "./actors/guardrail.js";
export { blocklist, maxLength, type BuiltinGuardrailOptions } from "./actors/guardrails-builtin.js";

// ---- durable runs (SQLite: `jianmu/sqlite`) ----
export { persistAgent, restoreAgent, readPersisted, statePath, runStatusOf, SnapshotError, SNAPSHOT_FORMAT, SNAPSHOT_VERSION } from "./machines/persistence/persistence.js";
export { STATE_TAGS, tagsAt, type StateTag } from "./machines/contract/state-tags.js";
export type { PersistedAgent, RunStatus, SnapshotProblem, SnapshotLimits } from "./machines/persistence/persistence.js";
export { DEFAULT_SNAPSHOT_LIMITS } from "./machines/persistence/persistence.js";
export { DEFAULT_INPUT_LIMITS } from "./machines/persistence/snapshot-limits.js";
export { ApproveEventSchema, RejectEventSchema, CancelEventSchema, commandShapeProblem } from "./machines/contract/commands.js";
export { CheckpointError } from "./machines/persistence/checkpoints/store.js";
export type { CheckpointStore, CheckpointSummary } from "./machines/persistence/checkpoints/store.js";
export { MemoryCheckpointStore } from "./machines/persistence/checkpoints/memory-store.js";
export { checkpointAgent } from "./machines/persistence/checkpoints/checkpoint-agent.js";
export type { CheckpointHandle, CheckpointOptions } from "./machines/persistence/checkpoints/checkpoint-agent.js";
export { forkRun } from "./machines/persistence/log/fork.js";
export type { ForkOptions } from "./machines/persistence/log/fork.js";
export { loadThread, ThreadBusyError } from "./machines/persistence/log/threads.js";
export type { ThreadView } from "./machines/persistence/log/threads.js";
export { CheckpointEntrySchema, isRunLogStore } from "./machines/persistence/log/log-store.js";
export type { RunLogStore, CheckpointEntry, ThreadRun, LogUsage, ForkRequest, StoredRunStatus, RunBranch } from "./machines/persistence/log/log-store.js";
export type { MemoryLogOptions } from "./machines/persistence/log/memory-log.js";
export { loadCheckpoint } from "./machines/persistence/checkpoints/load-checkpoint.js";
export { resolveBlobs, isBlobStore, MIN_BLOB_CHARS } from "./machines/persistence/blobs.js";
export type { BlobStore, StoredBlob } from "./machines/persistence/blobs.js";
export { MemoryToolJournal, RunStoppedError, ToolOutcomeSchema } from "./actors/tool-journal.js";
export type { ToolJournal, JournalEntry, JournalKey } from "./actors/tool-journal.js";

// ---- tools: built-ins (MCP servers: `jianmu/mcp`) ----
export { builtinTools, BUILTIN_TOOL_NAMES, calculatorTool, currentTimeTool, createCurrentTimeTool, createReadFileTool, createListFilesTool, evaluateExpression, ExpressionError, SandboxError } from "./tools/builtin/index.js";

// ---- visualize: recordings, viewer, diagrams (the live Stately inspector: `jianmu/inspect`) ----
export { combineInspectors } from "./visualize/combine-inspectors.js";
export { RunRecorder, recordRun, recordActor } from "./visualize/recorder.js";
export type { RecorderOptions, RecordRunOptions, RecordingSummary } from "./visualize/recorder.js";
export { RecordingError, RecordingFormatError } from "./visualize/recording-errors.js";
export { readRecording } from "./visualize/lazy.js";
export type { RecordingContents } from "./visualize/recording-reader.js";
export { RECORDING_FORMAT, RECORDING_VERSION } from "./visualize/recording-version.js";
export type { RecordLine, RecordingHeader } from "./visualize/recording-format.js";
export { replayRecording as replayRecordingInto } from "./visualize/lazy.js";
export type { ReplayTarget, ReplayedEvent, ReplaySummary, InspectorAdapterLike } from "./visualize/replay.js";
export { writeViewer, renderViewer } from "./visualize/lazy.js";
export { defaultViewerPath } from "./visualize/viewer-path.js";
export type { WriteViewerResult } from "./visualize/viewer.js";
export { analyzeRecording } from "./visualize/lazy.js";
export type { RunAnalysis, TimelineEntry } from "./visualize/analysis.js";
export { toMermaid } from "./visualize/mermaid.js";
export type { MermaidOptions } from "./visualize/mermaid.js";
export { describeMachine } from "./visualize/chart.js";
export type { Chart, ChartState, ChartTransition } from "./visualize/chart.js";
