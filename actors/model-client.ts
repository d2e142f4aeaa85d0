import type { FunctionSchema } from "../tools/toolset.js";
import type { Message, ToolCall } from "./messages.js";
import type { Resilience } from "./resilience-config.js";
import type { ModelCallEvent } from "./model-events.js";
import { JianmuError } from "../tools/jianmu-error.js";
import { USAGE_DETAILS, type Usage } from "./usage.js";
import type { Cancellation } from "./cancellation.js";
import type { SpendLimit } from "./spend.js";
import type { ModelRoute } from "./model-route.js";
import type { ReasoningItems } from "./reasoning-items.js";

export type { Usage } from "./usage.js";

export const ZERO_USAGE: Usage = Object.freeze({ promptTokens: 0, completionTokens: 0, totalTokens: 0 });

/**
 * The most tokens one call may report. Servers (and custom clients) have reported negative,
 * fractional and absurd counts; a count that is not an integer in [0, this] is not believed.
 */
export const MAX_CALL_TOKENS = 1_000_000_000;

/** A reported count as one we can add up: a non-negative safe integer, or undefined when it is not believable. */
export function tokenCount(value: unknown): number | undefined {
  return typeof value === "number" && Number.isInteger(value) && value >= 0 && value <= MAX_CALL_TOKENS ? value : undefined;
}

/** True when every count of `usage` is believable (see `tokenCount`); a detail may be absent. */
export function isSaneUsage(usage: unknown): usage is Usage {
  if (typeof usage !== "object" || usage === null) return false;
  const u = usage as Record<string, unknown>;
  if (tokenCount(u["promptTokens"]) === undefined || tokenCount(u["completionTokens"]) === undefined || tokenCount(u["totalTokens"]) === undefined) return false;
  for (const detail of USAGE_DETAILS) if (u[detail] !== undefined && tokenCount(u[detail]) === undefined) return false;
  return true;
}

/**
 * `usage` with every unbelievable count replaced: prompt and completion by 0, the total by their
 * sum, a detail dropped. Whatever comes in, what comes out is non-negative safe integers.
 */
export function saneUsage(usage: unknown): Usage {
  if (isSaneUsage(usage)) return usage;
  const u = typeof usage === "object" && usage !== null ? (usage as Record<string, unknown>) : {};
  const promptTokens = tokenCount(u["promptTokens"]) ?? 0;
  const completionTokens = tokenCount(u["completionTokens"]) ?? 0;
  const sane: Usage = { promptTokens, completionTokens, totalTokens: tokenCount(u["totalTokens"]) ?? promptTokens + completionTokens };
  for (const detail of USAGE_DETAILS) {
    const count = tokenCount(u[detail]);
    if (count !== undefined) sane[detail] = count;
  }
  return sane;
}

/** The sum, never past `Number.MAX_SAFE_INTEGER` and never from a count that is not believable. A detail either side reports is summed. */
export function addUsage(a: Usage, b: Usage): Usage {
  const left = isSaneTotal(a) ? a : saneTotal(a);
  const right = isSaneUsage(b) ? b : saneUsage(b);
  const sum: Usage = {
    promptTokens: capped(left.promptTokens + right.promptTokens),
    completionTokens: capped(left.completionTokens + right.completionTokens),
    totalTokens: capped(left.totalTokens + right.totalTokens),
  };
  for (const detail of USAGE_DETAILS) {
    const l = left[detail];
    const r = right[detail];
    if (l !== undefined || r !== undefined) sum[detail] = capped((isSafeCount(l) ? l : 0) + (isSafeCount(r) ? r : 0));
  }
  const cost = addCost(left, right);
  if (cost !== undefined) sum.cost = cost;
  return sum;
}

/**
 * The cost of a sum: absent when neither side is priced; unknown (`null`) when either side's is, or
 * when one side has tokens and no price at all (its cost is not known, and a sum without it would be a guess).
 */
function addCost(a: Usage, b: Usage): number | null | undefined {
  if (a.cost === undefined && b.cost === undefined) return undefined;
  const part = (u: Usage) => (u.cost === undefined ? (u.totalTokens === 0 ? 0 : null) : isBelievableCost(u.cost) ? u.cost : null);
  const left = part(a);
  const right = part(b);
  return left === null || right === null ? null : left + right;
}

function isBelievableCost(cost: unknown): cost is number {
  return typeof cost === "number" && Number.isFinite(cost) && cost >= 0;
}

/** A run's running total may exceed one call's limit, but must stay a non-negative safe integer. */
function isSafeCount(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) >= 0;
}
function isSaneTotal(usage: Usage): boolean {
  if (!isSafeCount(usage.promptTokens) || !isSafeCount(usage.completionTokens) || !isSafeCount(usage.totalTokens)) return false;
  for (const detail of USAGE_DETAILS) if (usage[detail] !== undefined && !isSafeCount(usage[detail])) return false;
  return true;
}
function saneTotal(usage: Usage): Usage {
  const count = (value: unknown) => (isSafeCount(value) ? value : 0);
  const sane: Usage = { promptTokens: count(usage.promptTokens), completionTokens: count(usage.completionTokens), totalTokens: count(usage.totalTokens) };
  for (const detail of USAGE_DETAILS) if (isSafeCount(usage[detail])) sane[detail] = usage[detail];
  return sane;
}
function capped(value: number): number {
  return Math.min(value, Number.MAX_SAFE_INTEGER);
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
  /**
   * What the call may still spend (actors/spend.ts), when the run has a budget. `maxTokens` is already
   * capped for the requested model; a client that retries or falls back caps each attempt again, for
   * its model and after what earlier attempts may have spent (as `ModelClient.resolve()`'s does).
   */
  spend?: SpendLimit;
  /** Where the run's last call was answered (`ModelTurn.route`): with sticky fallbacks, this call starts there. */
  route?: ModelRoute;
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
  /** Reasoning text some servers stream beside the answer (`reasoning_content`, `reasoning`, a Responses reasoning summary). */
  reasoning?: string;
  /** A reasoning model's reasoning items (Responses API), to be kept on the assistant message and sent back. */
  reasoningItems?: ReasoningItems;
  /** Which of the client's targets answered (the built-in client says; with fallbacks, the next call may start there). */
  route?: ModelRoute;
  /** True when the server reported no token usage; `usage` is then all zeros. */
  usageMissing?: boolean;
  /** The model name the server reported (often a dated snapshot of the requested alias). */
  serverModel?: string;
  /**
   * Attempts of this call that failed after reaching the server and reported no usage (a timeout, a
   * dropped stream) may still have been billed: the most they could have cost (their prompt and their
   * `maxTokens`). Not part of `usage`, which is what servers reported; budgets count it.
   */
  unreported?: UnreportedSpend;
}

/** What attempts may have been billed without a server reporting it: their prompts and caps, priced. */
export interface UnreportedSpend {
  tokens: number;
  cost: number;
}

/** Progress of one logical call, reported while it runs: its shapes are the schemas in model-events.ts. */
export type { ModelCallEvent } from "./model-events.js";

export interface ModelCallOptions {
  /** Cancels the HTTP request (the LLM actor passes its own signal). */
  signal?: AbortSignal;
  /**
   * The same cancellation as `signal`, cheaper (see `Cancellation`): a client that knows it uses it
   * and leaves `signal` unread, so the LLM step's signal is never built. Clients may ignore it.
   */
  cancellation?: Cancellation;
  onEvent?: (event: ModelCallEvent) => void;
  /**
   * A streamed tool call's arguments so far, after each fragment (the LLM step asks for them only
   * for a structured output's final-result tool). Clients that cannot report them ignore it.
   */
  onToolArguments?: (call: { index: number; name: string; arguments: string }) => void;
}

/**
 * The one thing the LLM step needs from a model: answer a request. `ModelClient.resolve()`
 * builds the real one over the `openai` SDK; `scriptedModel()` (from `jianmu/testing`) replays a script.
 */
export interface ModelClient {
  /** Names the endpoint and default model, for errors and logs. Never contains a key. */
  readonly description: string;
  /** The model a request that names none goes to (the built-in client's `model` option), when the client has one. */
  readonly model?: string | undefined;
  complete(request: ModelRequest, options?: ModelCallOptions): Promise<ModelTurn>;
}

/**
 * Why a model attempt failed. `config`: the client cannot make the call as configured (no model, missing
 * key variable, ...); `budget`: it would cross a budget (`request.spend`), so it was not made.
 */
export const MODEL_ERROR_KINDS = ["http", "timeout", "connection", "stream", "aborted", "invalid-response", "script", "config", "budget"] as const;
export type ModelErrorKind = (typeof MODEL_ERROR_KINDS)[number];

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
export class ModelError extends JianmuError {
  static override readonly errorCode = "MODEL_ERROR";
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
  /** With a budget: what the call's attempts may have been billed though none reported usage (see `ModelTurn.unreported`). */
  unreported?: UnreportedSpend;
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
