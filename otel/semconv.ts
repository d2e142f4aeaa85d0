/**
 * The attribute names and values the spans use: the OpenTelemetry GenAI semantic conventions
 * (`gen_ai.*`, as `@opentelemetry/semantic-conventions/incubating` 1.45 spells them), the general
 * `error.type` / `server.*`, and jianmu's own under `jianmu.*` for what the conventions do not name.
 * Written out here rather than imported: the incubating package is not a dependency, and a test
 * checks every `gen_ai.*` name against it.
 */
export const ATTR = {
  operationName: "gen_ai.operation.name",
  providerName: "gen_ai.provider.name",
  agentName: "gen_ai.agent.name",
  requestModel: "gen_ai.request.model",
  responseModel: "gen_ai.response.model",
  finishReasons: "gen_ai.response.finish_reasons",
  inputTokens: "gen_ai.usage.input_tokens",
  outputTokens: "gen_ai.usage.output_tokens",
  /** Of the input tokens, those read from the provider's prompt cache (counted in input_tokens too). */
  cacheReadInputTokens: "gen_ai.usage.cache_read.input_tokens",
  /** Of the output tokens, those spent reasoning (counted in output_tokens too). */
  reasoningOutputTokens: "gen_ai.usage.reasoning.output_tokens",
  inputMessages: "gen_ai.input.messages",
  outputMessages: "gen_ai.output.messages",
  toolName: "gen_ai.tool.name",
  toolType: "gen_ai.tool.type",
  toolCallId: "gen_ai.tool.call.id",
  toolCallArguments: "gen_ai.tool.call.arguments",
  toolCallResult: "gen_ai.tool.call.result",
  errorType: "error.type",
  serverAddress: "server.address",
  serverPort: "server.port",
  // jianmu's own
  runId: "jianmu.run.id",
  runStatus: "jianmu.run.status",
  runRounds: "jianmu.run.rounds",
  runRestored: "jianmu.run.restored",
  runSuspended: "jianmu.run.suspended",
  agentPath: "jianmu.agent.path",
  round: "jianmu.round",
  /** What the call (chat span) or the run (agent span) cost, in the currency units of `config.pricing`; absent when not known. */
  cost: "jianmu.usage.cost",
  attempt: "jianmu.model.attempt",
  willRetry: "jianmu.model.will_retry",
  toolStatus: "jianmu.tool.status",
  toolReason: "jianmu.tool.reason",
  /** On a `tool.call.retrying` span event: the attempt that failed, how many the call may take, the wait before the next. */
  toolAttempt: "jianmu.tool.attempt",
  toolAttempts: "jianmu.tool.attempts",
  toolRetryDelay: "jianmu.tool.retry_delay_ms",
  toolError: "jianmu.tool.error",
  approvalDecision: "jianmu.approval.decision",
  approvalEdited: "jianmu.approval.edited",
  approvalReason: "jianmu.approval.reason",
  approvalDeadline: "jianmu.approval.deadline",
  linkKind: "jianmu.link",
  handoffFrom: "jianmu.handoff.from",
  handoffTo: "jianmu.handoff.to",
  guardrailName: "jianmu.guardrail.name",
  guardrailStage: "jianmu.guardrail.stage",
  guardrailReason: "jianmu.guardrail.reason",
} as const;

export const OPERATION = {
  invokeAgent: "invoke_agent",
  chat: "chat",
  executeTool: "execute_tool",
} as const;

/** The API every endpoint speaks (the `openai` SDK), which is what the conventions mean by provider here. */
export const PROVIDER = "openai";

/** The name of the span for a call waiting on a person (not a GenAI operation, so no `gen_ai.operation.name`). */
export const AWAITING_APPROVAL = "awaiting_approval";

/** What an `execute_tool` span's `jianmu.tool.status` says. */
export type ToolSpanStatus = "completed" | "failed" | "denied" | "rejected" | "handoff" | "unfinished";

/** What an `awaiting_approval` span's `jianmu.approval.decision` says. */
export type ApprovalSpanDecision = "approved" | "rejected" | "undecided";
