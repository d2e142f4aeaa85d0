/**
 * jianmu: ReAct agents as explicit XState v5 statecharts.
 * The library's public surface; test doubles and model-based testing helpers live in `jianmu/testing`.
 */
export { createReactMachine, ACTOR_NAMES, MachineOptionsError, toolProvidersClosed } from "./machines/react-machine.js";
export type { ReactMachine, ReactMachineOptions, ReactAgentRef } from "./machines/react-machine.js";
export { runAgent } from "./machines/runner.js";
export type { RunOptions } from "./machines/runner.js";
export { AgentInputError } from "./machines/context.js";
export type { AgentContext, AgentInput, AgentOutput, LoopContext } from "./machines/context.js";
export { ReActConfig, ConfigError, loadConfig, readConfigFile, ToolChoiceSchema } from "./machines/config.js";
export type { ReActConfigInput, LoadConfigOptions, JianmuFile } from "./machines/config.js";
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
} from "./machines/state.js";
export type { FieldMeta, Lifetime, ReActField, ReActStateShape, StateKeys, StateSchema } from "./machines/state.js";
export { StateAccess, StateError } from "./machines/state-access.js";
export type { HostState } from "./machines/state-access.js";
export { EMITTED_TYPES } from "./machines/events.js";
export type {
  AgentCommand,
  AgentEmitted,
  AgentEmittedType,
  AgentEvent,
  ApproveEvent,
  CancelEvent,
  EmittedBase,
  ErrorInfo,
  RejectEvent,
  Termination,
  TerminationReason,
} from "./machines/events.js";

export { ai, human, system, toolMessage, MessageSchema, ToolCallSchema } from "./actors/messages.js";
export type { AssistantMessage, Message, SystemMessage, ToolCall, ToolMessage, UserMessage } from "./actors/messages.js";
export { ModelError, ZERO_USAGE, addUsage } from "./actors/model-client.js";
export type { ModelCallEvent, ModelCallOptions, ModelRequest, ModelTurn, ToolChoice, Usage } from "./actors/model-client.js";
export { ResilienceSchema, FallbackSchema } from "./actors/resilience-config.js";
export type { Fallback, Resilience, ResilienceInput } from "./actors/resilience-config.js";
export { DEFAULT_PERSONA, REACT_PROTOCOL, defaultContextBuilder } from "./actors/context-builder.js";
export type { ContextBuilder, ContextInput } from "./actors/context-builder.js";
export { buildModelRequest, createLLMActor } from "./actors/llm-step.js";
export type { LLMInput, LLMOutput } from "./actors/llm-step.js";
export { createPreflightActor, decide } from "./actors/guard.js";
export type { CallDecision, CallRecord, Guard, GuardCall, GuardContext, GuardDecision, PreflightInput, PreflightOutput } from "./actors/guard.js";
export { createToolExecutorActor } from "./actors/tool-executor.js";
export type { ExecutorInput, ExecutorOutput, ToolErrorKind, ToolOutcome, ToolProgress, ToolRunner } from "./actors/tool-executor.js";

export { defineTool, ToolDefinitionError } from "./tools/tool.js";
export type { DeepReadonly, JsonSchema, Tool, ToolContext, ToolDefinition, ToolInfo } from "./tools/tool.js";
export { ToolSet } from "./tools/toolset.js";
export type { FunctionSchema } from "./tools/toolset.js";
export { ToolProviderError } from "./tools/provider.js";
export type { ToolProvider } from "./tools/provider.js";
