import { APICallError, InvalidPromptError, UnsupportedFunctionalityError } from "ai";
import { ContentPartError, UNSUPPORTED_CONTENT } from "../content-capabilities.js";
import { AttemptError, parseRetryAfter, type AttemptFailure } from "../openai/model-failure.js";

/** Why the attempt's own controller was aborted, if it was. */
export type AbortCause = "caller" | "timeout" | undefined;

/**
 * An AI SDK failure in the terms jianmu's retry loop decides on: the provider's HTTP status (and
 * `retry-after`), a cancel, a timeout, or a request the SDK refused before sending (a part the
 * provider cannot take, a malformed prompt: not worth another attempt).
 */
export function attemptFailureOf(error: unknown, context: { aborted: AbortCause; timeoutMs: number; delivered: boolean }): AttemptError {
  const { delivered } = context;
  if (error instanceof AttemptError) return error;
  if (context.aborted === "caller") return new AttemptError({ category: "aborted", kind: "aborted", message: "the call was cancelled", delivered, cause: error });
  if (context.aborted === "timeout") {
    return new AttemptError({ category: "timeout", kind: "timeout", message: `no complete answer within ${context.timeoutMs} ms`, delivered, cause: error });
  }
  if (error instanceof ContentPartError || UnsupportedFunctionalityError.isInstance(error)) {
    return new AttemptError({ category: "config", kind: "config", code: UNSUPPORTED_CONTENT, message: messageOf(error), delivered: false, cause: error });
  }
  const unsupported = unsupportedVersion(error);
  if (unsupported !== undefined) return new AttemptError({ category: "config", kind: "config", message: unsupported, delivered: false, cause: error });
  if (InvalidPromptError.isInstance(error)) return new AttemptError({ category: "config", kind: "config", message: messageOf(error), delivered: false, cause: error });
  if (APICallError.isInstance(error)) return new AttemptError(httpFailure(error, delivered));
  return new AttemptError({ category: "connection", kind: "connection", message: `connection failed: ${messageOf(error)}`, delivered, cause: error });
}

/**
 * A model of a specification the app's `ai` cannot run (a v4 model, from a provider package made
 * for AI SDK 7, given to AI SDK 6), said with the fix: the SDK's own message names the wrong major.
 */
function unsupportedVersion(error: unknown): string | undefined {
  const { name, version } = (error ?? {}) as { name?: unknown; version?: unknown };
  if (name !== "AI_UnsupportedModelVersionError" || typeof version !== "string") return undefined;
  const needs = version === "v4" ? "AI SDK 7 (npm install ai@7)" : "the `ai` major its provider package was made for";
  return `the installed ai package cannot run a model of specification ${version}: it needs ${needs}`;
}

function httpFailure(error: APICallError, delivered: boolean): AttemptFailure {
  const status = error.statusCode;
  if (status === undefined) return { category: "connection", kind: "connection", message: `connection failed: ${messageOf(error)}`, delivered, cause: error };
  const category = status === 429 ? "rate_limit" : status === 408 ? "timeout" : status >= 500 ? "server_error" : "client_error";
  const failure: AttemptFailure = { category, kind: "http", status, message: error.message, delivered, cause: error };
  const retryAfterMs = parseRetryAfter(error.responseHeaders ? new Headers(error.responseHeaders) : undefined);
  if (retryAfterMs !== undefined) failure.retryAfterMs = retryAfterMs;
  const code = serverCode(error.data);
  if (code !== undefined) failure.code = code;
  return failure;
}

/** The provider's own error code or type (`rate_limit_error`, `overloaded_error`, ...), when its body said. */
function serverCode(data: unknown): string | undefined {
  const inner = (data as { error?: { code?: unknown; type?: unknown } } | undefined)?.error;
  const code = inner?.code ?? inner?.type;
  return typeof code === "string" || typeof code === "number" ? String(code) : undefined;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
