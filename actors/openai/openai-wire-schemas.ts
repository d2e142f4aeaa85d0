import { z } from "zod";
import { tokenCount, type Usage } from "../model-client.js";

/*
 * Lenient shapes of what OpenAI-compatible servers send back. Every field is optional and
 * nullable because real servers differ (absent vs null vs ""), and unknown keys pass through
 * (`obfuscation`, `x_groq`, `content_filter_results`, vLLM's `token_ids`, ...). Only a field
 * of the wrong type (e.g. `content: 42`) makes a response invalid.
 */

const optionalString = z.string().nullish();

/** Some servers (Ollama's native path, a few gateways) send arguments as an object. */
const ArgumentsSchema = z.union([z.string(), z.record(z.string(), z.unknown())]).nullish();

export const WireUsageSchema = z
  .object({
    prompt_tokens: z.number().nullish(),
    completion_tokens: z.number().nullish(),
    total_tokens: z.number().nullish(),
  })
  .loose();
export type WireUsage = z.infer<typeof WireUsageSchema>;

export const ToolCallDeltaSchema = z
  .object({
    index: z.number().int().nullish(),
    id: optionalString,
    type: optionalString,
    function: z.object({ name: optionalString, arguments: ArgumentsSchema }).loose().nullish(),
  })
  .loose();
export type ToolCallDelta = z.infer<typeof ToolCallDeltaSchema>;

const TextFields = {
  content: optionalString,
  refusal: optionalString,
  reasoning_content: optionalString,
  reasoning: optionalString,
};

export const ChunkSchema = z
  .object({
    model: optionalString,
    choices: z
      .array(
        z
          .object({
            index: z.number().int().nullish(),
            delta: z.object({ ...TextFields, tool_calls: z.array(ToolCallDeltaSchema).nullish() }).loose().nullish(),
            finish_reason: optionalString,
          })
          .loose(),
      )
      .nullish(),
    usage: WireUsageSchema.nullish(),
  })
  .loose();
export type Chunk = z.infer<typeof ChunkSchema>;

export const CompletionSchema = z
  .object({
    model: optionalString,
    choices: z.array(
      z
        .object({
          index: z.number().int().nullish(),
          message: z.object({ ...TextFields, tool_calls: z.array(ToolCallDeltaSchema).nullish() }).loose(),
          finish_reason: optionalString,
        })
        .loose(),
    ),
    usage: WireUsageSchema.nullish(),
  })
  .loose();
export type Completion = z.infer<typeof CompletionSchema>;

/*
 * The schemas above say what we accept and word the error for what we reject. Running them on
 * every response, though, was the costliest thing the client did: each call finds zod's many
 * small functions cold (the HTTP stack ran in between), 10-15 µs of CPU for a completion or a
 * short stream against a loopback server (7-10 µs even with lean, non-copying schemas), as much
 * as a whole model call may add over the raw SDK. So the shape servers send in practice (plain
 * strings, integer indexes, string arguments) is recognized by the checks below (about 1 µs) and
 * handed on as is: the schemas are loose, so their output would be an equal copy. Whatever the
 * checks do not recognize goes to the schema, which accepts the rarer valid shapes (arguments
 * as an object) and names the field that is wrong. Each check accepts only what its schema
 * accepts (test/model-client/wire-fast-path.test.ts pins that down), so what passes and every
 * error message stay the schemas' own.
 */

/** Like `safeParse`, so a caller cannot tell which way a value went. */
export type WireParse<T> = { success: true; data: T; error?: undefined } | { success: false; error: z.ZodError; data?: undefined };

/** A stream chunk, validated. */
export function parseChunk(raw: unknown): WireParse<Chunk> {
  return isPlainChunk(raw) ? { success: true, data: raw } : ChunkSchema.safeParse(raw);
}

/** A whole `chat.completion`, validated. */
export function parseCompletion(raw: unknown): WireParse<Completion> {
  return isPlainCompletion(raw) ? { success: true, data: raw } : CompletionSchema.safeParse(raw);
}

type WireObject = Record<string, unknown>;

/** zod's own test for an object. */
function isObject(value: unknown): value is WireObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** `optionalString`. */
function isText(value: unknown): boolean {
  return value === undefined || value === null || typeof value === "string";
}

/** `z.number().int().nullish()`: zod's int is a safe integer. */
function isIndex(value: unknown): boolean {
  return value === undefined || value === null || Number.isSafeInteger(value);
}

/** `z.number().nullish()`: zod's number is finite. */
function isCount(value: unknown): boolean {
  return value === undefined || value === null || (typeof value === "number" && Number.isFinite(value));
}

function isPlainUsage(usage: unknown): boolean {
  if (usage === undefined || usage === null) return true;
  return isObject(usage) && isCount(usage["prompt_tokens"]) && isCount(usage["completion_tokens"]) && isCount(usage["total_tokens"]);
}

function isPlainToolCalls(calls: unknown): boolean {
  if (calls === undefined || calls === null) return true;
  if (!Array.isArray(calls)) return false;
  for (let i = 0; i < calls.length; i++) {
    const call: unknown = calls[i];
    if (!isObject(call) || !isIndex(call["index"]) || !isText(call["id"]) || !isText(call["type"])) return false;
    const fn = call["function"];
    // `isText` rather than the schema's union: arguments sent as an object are left to the schema.
    if (fn !== undefined && fn !== null && !(isObject(fn) && isText(fn["name"]) && isText(fn["arguments"]))) return false;
  }
  return true;
}

/** A `delta` or a `message`: the text fields and the tool calls. */
function isPlainMessage(message: WireObject): boolean {
  return (
    isText(message["content"]) &&
    isText(message["refusal"]) &&
    isText(message["reasoning_content"]) &&
    isText(message["reasoning"]) &&
    isPlainToolCalls(message["tool_calls"])
  );
}

function isPlainChunk(raw: unknown): raw is Chunk {
  if (!isObject(raw) || !isText(raw["model"]) || !isPlainUsage(raw["usage"])) return false;
  const choices = raw["choices"];
  if (choices === undefined || choices === null) return true;
  if (!Array.isArray(choices)) return false;
  for (let i = 0; i < choices.length; i++) {
    const choice: unknown = choices[i];
    if (!isObject(choice) || !isIndex(choice["index"]) || !isText(choice["finish_reason"])) return false;
    const delta = choice["delta"];
    if (delta !== undefined && delta !== null && !(isObject(delta) && isPlainMessage(delta))) return false;
  }
  return true;
}

function isPlainCompletion(raw: unknown): raw is Completion {
  if (!isObject(raw) || !isText(raw["model"]) || !isPlainUsage(raw["usage"])) return false;
  const choices = raw["choices"];
  if (!Array.isArray(choices)) return false;
  for (let i = 0; i < choices.length; i++) {
    const choice: unknown = choices[i];
    if (!isObject(choice) || !isIndex(choice["index"]) || !isText(choice["finish_reason"])) return false;
    const message = choice["message"];
    if (!isObject(message) || !isPlainMessage(message)) return false;
  }
  return true;
}

/**
 * Our usage from the server's. `total_tokens` is trusted as sent: xAI counts reasoning tokens in
 * the total but not in `completion_tokens`, so prompt + completion would undercount the budget.
 * The details (`completion_tokens_details.reasoning_tokens`, `prompt_tokens_details.cached_tokens`,
 * DeepSeek's `prompt_cache_hit_tokens`) are read where present; one that is not a believable count
 * is left out rather than failing the response.
 */
export function toUsage(usage: WireUsage | null | undefined): Usage {
  // No usage at all reads as zeros; the caller flags it as `usageMissing`.
  if (!usage) return { promptTokens: 0, completionTokens: 0, totalTokens: 0 };
  // A count that is negative, fractional or absurd is not believed (see `tokenCount`).
  const promptTokens = tokenCount(usage.prompt_tokens) ?? 0;
  const completionTokens = tokenCount(usage.completion_tokens) ?? 0;
  const out: Usage = { promptTokens, completionTokens, totalTokens: tokenCount(usage.total_tokens) ?? promptTokens + completionTokens };
  const reasoning = tokenCount(detailOf(usage["completion_tokens_details"], "reasoning_tokens"));
  if (reasoning !== undefined) out.reasoningTokens = reasoning;
  const cached = tokenCount(detailOf(usage["prompt_tokens_details"], "cached_tokens") ?? usage["prompt_cache_hit_tokens"]);
  if (cached !== undefined) out.cachedPromptTokens = cached;
  return out;
}

/** `details[key]` when `details` is an object (servers send null, or nothing, just as often). */
export function detailOf(details: unknown, key: string): unknown {
  return typeof details === "object" && details !== null ? (details as Record<string, unknown>)[key] : undefined;
}

/** True when the server sent usage and some count of it could not be believed. */
export function usageDistrusted(usage: WireUsage | null | undefined): boolean {
  if (!usage) return false;
  const believable = (value: number | null | undefined) => value === null || value === undefined || tokenCount(value) !== undefined;
  return !(believable(usage.prompt_tokens) && believable(usage.completion_tokens) && believable(usage.total_tokens));
}

/** Arguments as the raw JSON text we keep; "" (a tool without parameters on some servers) becomes "{}". */
export function argumentsText(value: string | Record<string, unknown> | null | undefined): string {
  if (value === null || value === undefined) return "";
  return typeof value === "string" ? value : JSON.stringify(value);
}

/** One line naming what was wrong in a response, for the `invalid-response` error. */
export function describeWireIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return "unexpected response shape";
  return `${issue.path.length > 0 ? issue.path.join(".") : "(body)"}: ${issue.message}`;
}
