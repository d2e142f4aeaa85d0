import { z } from "zod";
import type { Usage } from "../model-client.js";

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

/**
 * Our usage from the server's. `total_tokens` is trusted as sent: xAI counts reasoning tokens in
 * the total but not in `completion_tokens`, so prompt + completion would undercount the budget.
 */
export function toUsage(usage: WireUsage): Usage {
  const promptTokens = usage.prompt_tokens ?? 0;
  const completionTokens = usage.completion_tokens ?? 0;
  return { promptTokens, completionTokens, totalTokens: usage.total_tokens ?? promptTokens + completionTokens };
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
