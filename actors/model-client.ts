import type { FunctionSchema } from "../tools/toolset.js";
import type { Message, ToolCall } from "./messages.js";
import type { Resilience } from "./resilience-config.js";

/** Token counts of one model call, or summed over a run. */
export interface Usage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
}

export const ZERO_USAGE: Usage = Object.freeze({ promptTokens: 0, completionTokens: 0, totalTokens: 0 });

export function addUsage(a: Usage, b: Usage): Usage {
  return {
    promptTokens: a.promptTokens + b.promptTokens,
    completionTokens: a.completionTokens + b.completionTokens,
    totalTokens: a.totalTokens + b.totalTokens,
  };
}

/** `tool_choice` as the Chat Completions API takes it. */
export type ToolChoice = "auto" | "none" | "required" | { type: "function"; function: { name: string } };

/** One logical model call: everything the LLM step decided to send. */
export interface ModelRequest {
  /** Overrides the client's default model. */
  model?: string;
  messages: Message[];
  tools: FunctionSchema[];
  /** Present only on the first round of a run (contract section 3). */
  toolChoice?: ToolChoice;
  temperature?: number;
  maxTokens?: number;
  topP?: number;
  topK?: number;
  /** Time limit of one HTTP attempt, in milliseconds. */
  timeoutMs?: number;
  /** Passed through to the API body as is. */
  extraParams?: Record<string, unknown>;
  /** Overrides the client's retry and fallback settings for this call (from `config.resilience`). */
  resilience?: Resilience;
}

/** What the model answered, merged from a stream or read from a whole response. */
export interface ModelTurn {
  /** Assistant text ("" when the model only called tools). */
  content: string;
  toolCalls: ToolCall[];
  usage: Usage;
  /** `stop`, `tool_calls`, `length`, ... or null when the server sent none. */
  finishReason: string | null;
  /** The model that actually answered (after fallbacks). */
  model: string;
  /** Set when the model refused; the text explains why. */
  refusal?: string;
  /** Reasoning text some servers stream beside the answer (`reasoning_content`, `reasoning`). */
  reasoning?: string;
  /** True when the server reported no token usage; `usage` is then all zeros. */
  usageMissing?: boolean;
  /** The model name the server reported (often a dated snapshot of the requested alias). */
  serverModel?: string;
}

/** Progress of one logical call, reported while it runs (attempts, retries, streamed text). */
export type ModelCallEvent =
  | { type: "model.call.started"; attempt: number; model: string; endpoint: string }
  | { type: "text.delta"; delta: string }
  | {
      type: "model.call.completed";
      attempt: number;
      model: string;
      endpoint: string;
      usage: Usage;
      finishReason: string | null;
      durationMs: number;
    }
  | {
      type: "model.call.failed";
      attempt: number;
      model: string;
      endpoint: string;
      status?: number;
      message: string;
      /** True when another attempt follows (a retry of this endpoint or the next fallback). */
      willRetry: boolean;
      durationMs: number;
      kind?: ModelErrorKind;
      /** The server's error code (`rate_limit_exceeded`, `tool_use_failed`, ...), when it sent one. */
      code?: string;
      /** What happens next: the same endpoint again, the next fallback, or nothing (the call fails). */
      next?: "retry" | "fallback" | "none";
    };

export interface ModelCallOptions {
  /** Cancels the HTTP request (the LLM actor passes its own signal). */
  signal?: AbortSignal;
  onEvent?: (event: ModelCallEvent) => void;
}

/**
 * The one thing the LLM step needs from a model: answer a request. `ModelClient.resolve()`
 * builds the real one over the `openai` SDK; `scriptedModel()` (from `jianmu/testing`) replays a script.
 */
export interface ModelClient {
  /** Names the endpoint and default model, for errors and logs. Never contains a key. */
  readonly description: string;
  complete(request: ModelRequest, options?: ModelCallOptions): Promise<ModelTurn>;
}

export type ModelErrorKind =
  | "http"
  | "timeout"
  | "connection"
  | "stream"
  | "aborted"
  | "invalid-response"
  | "script"
  /** The client cannot make the call as configured (no model, missing key variable, ...). */
  | "config";

/** One failed attempt, kept on the final `ModelError` so every endpoint's reason is visible. */
export interface ModelAttemptFailure {
  attempt: number;
  endpoint: string;
  model: string;
  kind: ModelErrorKind;
  status?: number;
  code?: string;
  message: string;
}

/** A model call that failed for good (after retries and fallbacks). */
export class ModelError extends Error {
  override name = "ModelError";
  readonly kind: ModelErrorKind;
  readonly status?: number;
  readonly endpoint?: string;
  readonly model?: string;
  readonly retryable: boolean;
  /** The server's error code, when it sent one. */
  readonly code?: string;
  /** Every failed attempt of the call, in order (retries and fallbacks). */
  readonly attempts?: readonly ModelAttemptFailure[];
  constructor(
    message: string,
    details: {
      kind: ModelErrorKind;
      status?: number;
      endpoint?: string;
      model?: string;
      retryable?: boolean;
      cause?: unknown;
      code?: string;
      attempts?: readonly ModelAttemptFailure[];
    },
  ) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.kind = details.kind;
    if (details.status !== undefined) this.status = details.status;
    if (details.endpoint !== undefined) this.endpoint = details.endpoint;
    if (details.model !== undefined) this.model = details.model;
    this.retryable = details.retryable ?? false;
    if (details.code !== undefined) this.code = details.code;
    if (details.attempts !== undefined) this.attempts = details.attempts;
  }
}
