import type { APIError } from "openai";
import type { ModelErrorKind } from "../model-client.js";
import type { RetryableFailure } from "../resilience-config.js";
import { JianmuError } from "../../tools/jianmu-error.js";
import { loadedOpenAI } from "./openai-sdk.js";

/** Why one attempt failed, in the terms the retry policy decides on. */
export type FailureCategory = RetryableFailure | "client_error" | "stream_error" | "invalid_response" | "aborted" | "config";

export interface AttemptFailure {
  category: FailureCategory;
  kind: ModelErrorKind;
  status?: number;
  /** The server's error code, as a string (`unsupported_parameter`, `tool_use_failed`, `429`). */
  code?: string;
  /** What went wrong, in the server's words when it said something. */
  message: string;
  /** How long the server asked us to wait (`retry-after-ms` / `retry-after`). */
  retryAfterMs?: number;
  /** Output had already reached the caller when it failed, so it must not be retried. */
  delivered: boolean;
  /** The server itself reported the failure with an `error` event inside a 200 stream. */
  serverEvent?: boolean;
  cause?: unknown;
}

/** Thrown by one attempt; the retry loop reads the failure and decides what comes next. */
export class AttemptError extends JianmuError {
  static override readonly errorCode = "ATTEMPT_ERROR";
  override name = "AttemptError";
  constructor(readonly failure: AttemptFailure) {
    super(failure.message, failure.cause === undefined ? undefined : { cause: failure.cause });
  }
}

/** The server's reply cannot be read (malformed JSON, a wrong shape): sending the same request again will not fix it. */
export function invalidResponse(message: string, delivered: boolean, cause?: unknown): AttemptError {
  return new AttemptError({ category: "invalid_response", kind: "invalid-response", message, delivered, ...(cause !== undefined ? { cause } : {}) });
}

/** What the attempt knew when the error came: who aborted it, and whether output had gone out. */
export interface FailureContext {
  abortReason?: "caller" | "timeout";
  timeoutMs: number;
  delivered: boolean;
}

export function classifyFailure(error: unknown, context: FailureContext): AttemptFailure {
  const { delivered } = context;
  if (error instanceof AttemptError) return { ...error.failure, delivered: error.failure.delivered || delivered };
  // Our own controller was aborted: the SDK reports both cases as a user abort (or not at all).
  if (context.abortReason === "caller") {
    return { category: "aborted", kind: "aborted", message: "the call was cancelled", delivered, cause: error };
  }
  // An SDK error comes from an attempt, and attempts run only once the SDK is loaded.
  const sdk = loadedOpenAI();
  if (context.abortReason === "timeout" || (sdk && error instanceof sdk.APIConnectionTimeoutError)) {
    return {
      category: "timeout",
      kind: "timeout",
      message: `no complete answer within ${context.timeoutMs} ms`,
      delivered,
      cause: error,
    };
  }
  if (sdk && error instanceof sdk.APIUserAbortError) {
    return { category: "aborted", kind: "aborted", message: "the call was cancelled", delivered, cause: error };
  }
  if (sdk && error instanceof sdk.APIConnectionError) {
    return { category: "connection", kind: "connection", message: connectionMessage(error), delivered, cause: error };
  }
  if (sdk && error instanceof sdk.APIError) return fromApiError(error, delivered);
  // Anything else came from reading the body: undici's "terminated" when the socket drops mid-stream.
  return { category: "connection", kind: "connection", message: connectionMessage(error), delivered, cause: error };
}

function fromApiError(error: APIError, delivered: boolean): AttemptFailure {
  const body = isRecord(error.error) ? error.error : undefined;
  const code = error.code ?? body?.["code"];
  const failure: AttemptFailure = {
    category: "client_error",
    kind: "http",
    message: serverMessage(error, body),
    delivered,
    cause: error,
  };
  if (code !== undefined && code !== null) failure.code = String(code);
  if (error.status !== undefined) {
    failure.status = error.status;
    // OpenAI answers an exhausted quota with 429 too, but waiting does not refill it: not retried.
    failure.category = failure.code === "insufficient_quota" ? "client_error" : categoryOfStatus(error.status);
    const retryAfterMs = parseRetryAfter(error.headers);
    if (retryAfterMs !== undefined) failure.retryAfterMs = retryAfterMs;
    return failure;
  }
  // No HTTP status: the server sent an `error` event inside a 200 stream (Groq, OpenRouter).
  // Its own status, if it gave one, decides whether trying again can help.
  failure.kind = "stream";
  failure.serverEvent = true;
  const inner = body?.["status_code"] ?? (typeof body?.["code"] === "number" ? body["code"] : undefined);
  if (typeof inner === "number") {
    failure.status = inner;
    const category = categoryOfStatus(inner);
    failure.category = category === "client_error" ? "stream_error" : category;
  } else {
    failure.category = "stream_error";
  }
  return failure;
}

function categoryOfStatus(status: number): FailureCategory {
  if (status === 429) return "rate_limit";
  if (status === 408) return "timeout";
  if (status >= 500) return "server_error";
  return "client_error";
}

function serverMessage(error: APIError, body: Record<string, unknown> | undefined): string {
  let message = typeof body?.["message"] === "string" ? body["message"] : error.message;
  if (error.status !== undefined && message.startsWith(`${error.status} `)) message = message.slice(`${error.status} `.length);
  // OpenRouter puts the upstream provider's explanation here; it is the useful part.
  const metadata = body?.["metadata"];
  if (isRecord(metadata) && typeof metadata["raw"] === "string") message += ` (${metadata["raw"]})`;
  return message;
}

/** The chain of messages down to the root cause ("fetch failed: connect ECONNREFUSED ..."), minus the SDK's generic one. */
function connectionMessage(error: unknown): string {
  const parts: string[] = [];
  let current: unknown = error;
  for (let depth = 0; current !== undefined && current !== null && depth < 5; depth++) {
    const message = current instanceof Error ? current.message : String(current);
    if (message !== "" && message !== "Connection error." && !parts.includes(message)) parts.push(message);
    current = current instanceof Error ? current.cause : undefined;
  }
  return `connection failed: ${parts.join(": ") || "no details"}`;
}

/** `retry-after-ms` (OpenAI's, milliseconds) wins over `retry-after` (seconds or an HTTP date). */
export function parseRetryAfter(headers: Headers | undefined, now: number = Date.now()): number | undefined {
  if (!headers) return undefined;
  const ms = headers.get("retry-after-ms");
  if (ms !== null) {
    const value = Number.parseFloat(ms);
    if (Number.isFinite(value) && value >= 0) return value;
  }
  const after = headers.get("retry-after");
  if (after === null) return undefined;
  const seconds = Number.parseFloat(after);
  if (Number.isFinite(seconds) && /^\s*[\d.]+\s*$/.test(after)) return Math.max(0, seconds * 1000);
  const date = Date.parse(after);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
