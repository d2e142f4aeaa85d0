import { z } from "zod";
import { tokenCount, type Usage } from "../model-client.js";
import { detailOf, type WireParse } from "./openai-wire-schemas.js";

/*
 * Lenient shapes of what a Responses API server sends back (`POST /v1/responses`): the response
 * object (a whole reply, and the `response` of a stream's terminal event) and the output items we
 * read. As on the Chat Completions side (openai-wire-schemas.ts), every field is optional and
 * nullable, unknown keys and unknown item types pass, and only a field of the wrong type makes a
 * response invalid. The same two-step reading too: a plain check recognizes the shape servers send
 * (about a microsecond) and hands it on as is; only what it does not recognize goes to the schema,
 * which accepts the rarer valid shapes and words the error. test/model-client/responses-wire.test.ts
 * holds each check to its schema.
 */

const optionalString = z.string().nullish();

/** `message` items: their text parts (`output_text`) and refusals. */
export const MessageItemSchema = z
  .object({
    type: z.literal("message"),
    content: z.array(z.object({ type: optionalString, text: optionalString, refusal: optionalString }).loose()).nullish(),
  })
  .loose();
export type MessageItem = z.infer<typeof MessageItemSchema>;

/** `function_call` items. Some servers send the arguments as an object. */
export const FunctionCallItemSchema = z
  .object({
    type: z.literal("function_call"),
    id: optionalString,
    call_id: optionalString,
    name: optionalString,
    arguments: z.union([z.string(), z.record(z.string(), z.unknown())]).nullish(),
  })
  .loose();
export type FunctionCallItem = z.infer<typeof FunctionCallItemSchema>;

/** `reasoning` items: an id, summary parts, maybe encrypted content, maybe raw reasoning text. */
export const ReasoningOutputItemSchema = z
  .object({
    type: z.literal("reasoning"),
    id: optionalString,
    summary: z.array(z.object({ text: optionalString }).loose()).nullish(),
    content: z.array(z.object({ text: optionalString }).loose()).nullish(),
    encrypted_content: optionalString,
  })
  .loose();
export type ReasoningOutputItem = z.infer<typeof ReasoningOutputItemSchema>;

/** The output items we read, by type; any other type (web searches, images...) is passed over. */
export type OutputItem = MessageItem | FunctionCallItem | ReasoningOutputItem;

const ITEM_SCHEMAS = {
  message: MessageItemSchema,
  function_call: FunctionCallItemSchema,
  reasoning: ReasoningOutputItemSchema,
} as const;

export const ResponsesUsageSchema = z
  .object({
    input_tokens: z.number().nullish(),
    output_tokens: z.number().nullish(),
    total_tokens: z.number().nullish(),
  })
  .loose();
export type ResponsesUsage = z.infer<typeof ResponsesUsageSchema>;

/** The response object. `output` holds items of any type; the ones we read are checked one by one. */
export const ResponseObjectSchema = z
  .object({
    model: optionalString,
    status: optionalString,
    output: z.array(z.object({ type: z.string() }).loose()).nullish(),
    usage: ResponsesUsageSchema.nullish(),
    error: z.object({ code: optionalString, message: optionalString }).loose().nullish(),
    incomplete_details: z.object({ reason: optionalString }).loose().nullish(),
  })
  .loose();
export type ResponseObject = z.infer<typeof ResponseObjectSchema>;

type WireObject = Record<string, unknown>;

function isObject(value: unknown): value is WireObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isText(value: unknown): boolean {
  return value === undefined || value === null || typeof value === "string";
}

function isCount(value: unknown): boolean {
  return value === undefined || value === null || (typeof value === "number" && Number.isFinite(value));
}

/** An array (or nothing) of objects whose listed fields are text. */
function isTextParts(value: unknown, fields: readonly string[]): boolean {
  if (value === undefined || value === null) return true;
  if (!Array.isArray(value)) return false;
  for (let i = 0; i < value.length; i++) {
    const part: unknown = value[i];
    if (!isObject(part)) return false;
    for (let f = 0; f < fields.length; f++) if (!isText(part[fields[f] as string])) return false;
  }
  return true;
}

const MESSAGE_PART_FIELDS = ["type", "text", "refusal"] as const;
const TEXT_FIELD = ["text"] as const;

function isPlainItem(item: WireObject): boolean {
  switch (item["type"]) {
    case "message":
      return isTextParts(item["content"], MESSAGE_PART_FIELDS);
    case "function_call":
      // `isText` rather than the schema's union: arguments sent as an object are left to the schema.
      return isText(item["id"]) && isText(item["call_id"]) && isText(item["name"]) && isText(item["arguments"]);
    case "reasoning":
      return isText(item["id"]) && isText(item["encrypted_content"]) && isTextParts(item["summary"], TEXT_FIELD) && isTextParts(item["content"], TEXT_FIELD);
    default:
      return typeof item["type"] === "string";
  }
}

function isPlainResponse(raw: unknown): raw is ResponseObject {
  if (!isObject(raw) || !isText(raw["model"]) || !isText(raw["status"])) return false;
  const usage = raw["usage"];
  if (usage !== undefined && usage !== null && !(isObject(usage) && isCount(usage["input_tokens"]) && isCount(usage["output_tokens"]) && isCount(usage["total_tokens"]))) return false;
  const error = raw["error"];
  if (error !== undefined && error !== null && !(isObject(error) && isText(error["code"]) && isText(error["message"]))) return false;
  const incomplete = raw["incomplete_details"];
  if (incomplete !== undefined && incomplete !== null && !(isObject(incomplete) && isText(incomplete["reason"]))) return false;
  const output = raw["output"];
  if (output === undefined || output === null) return true;
  if (!Array.isArray(output)) return false;
  for (let i = 0; i < output.length; i++) {
    const item: unknown = output[i];
    if (!isObject(item) || !isPlainItem(item)) return false;
  }
  return true;
}

/** A response object, validated: its envelope and every output item of a type we read. */
export function parseResponseObject(raw: unknown): WireParse<ResponseObject> {
  if (isPlainResponse(raw)) return { success: true, data: raw };
  const envelope = ResponseObjectSchema.safeParse(raw);
  if (!envelope.success) return envelope;
  const output = envelope.data.output ?? [];
  for (let i = 0; i < output.length; i++) {
    const item = output[i] as { type: string };
    const schema = ITEM_SCHEMAS[item.type as keyof typeof ITEM_SCHEMAS] as z.ZodType | undefined;
    if (schema === undefined) continue;
    const checked = schema.safeParse(item);
    if (!checked.success) return { success: false, error: new z.ZodError(checked.error.issues.map((issue) => ({ ...issue, path: ["output", i, ...issue.path] }))) };
    output[i] = checked.data as { type: string };
  }
  return envelope;
}

/** One output item validated on its own (a stream's `response.output_item.done`): undefined for a type we do not read. */
export function parseOutputItem(raw: unknown): WireParse<OutputItem> | undefined {
  if (!isObject(raw)) return { success: false, error: new z.ZodError([{ code: "custom", path: [], message: "an output item must be an object", input: raw }]) };
  const schema = ITEM_SCHEMAS[raw["type"] as keyof typeof ITEM_SCHEMAS] as z.ZodType<OutputItem> | undefined;
  if (schema === undefined) return undefined;
  return isPlainItem(raw) ? { success: true, data: raw as OutputItem } : schema.safeParse(raw);
}

/**
 * Our usage from a Responses server's: `input_tokens`/`output_tokens`, with
 * `input_tokens_details.cached_tokens` and `output_tokens_details.reasoning_tokens` as the details.
 * The total is trusted as sent, as on the Chat Completions side.
 */
export function toResponsesUsage(usage: ResponsesUsage | null | undefined): Usage {
  if (!usage) return { promptTokens: 0, completionTokens: 0, totalTokens: 0 };
  const promptTokens = tokenCount(usage.input_tokens) ?? 0;
  const completionTokens = tokenCount(usage.output_tokens) ?? 0;
  const out: Usage = { promptTokens, completionTokens, totalTokens: tokenCount(usage.total_tokens) ?? promptTokens + completionTokens };
  const reasoning = tokenCount(detailOf(usage["output_tokens_details"], "reasoning_tokens"));
  if (reasoning !== undefined) out.reasoningTokens = reasoning;
  const cached = tokenCount(detailOf(usage["input_tokens_details"], "cached_tokens"));
  if (cached !== undefined) out.cachedPromptTokens = cached;
  return out;
}

/** True when the server sent usage and one of its counts could not be believed. */
export function responsesUsageDistrusted(usage: ResponsesUsage | null | undefined): boolean {
  if (!usage) return false;
  const believable = (value: number | null | undefined) => value === null || value === undefined || tokenCount(value) !== undefined;
  return !(believable(usage.input_tokens) && believable(usage.output_tokens) && believable(usage.total_tokens));
}
