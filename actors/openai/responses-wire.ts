import type { AssistantMessage, Message, ToolCall } from "../messages.js";
import type { ModelRequest, ToolChoice } from "../model-client.js";
import { readableBy, type ReasoningItem } from "../reasoning-items.js";
import type { FunctionSchema } from "../../tools/toolset.js";
import { copyExtraParams, type EndpointTuning } from "./openai-wire.js";
import { partPlace } from "../content-parts.js";
import { toResponsesParts, type ResponsesContentPart } from "./content-parts-wire.js";

/** Where a request goes: its reasoning items are sent only when this is where they came from. */
export interface RequestTarget {
  endpoint: string;
  model: string;
}

/** The input items of the Responses API that our messages become. */
export type ResponsesInputItem =
  | { role: "system" | "assistant"; content: string }
  | { role: "user"; content: string | ResponsesContentPart[] }
  | { type: "function_call"; call_id: string; name: string; arguments: string }
  | { type: "function_call_output"; call_id: string; output: string | ResponsesContentPart[] }
  | {
      type: "reasoning";
      id: string;
      summary: { type: "summary_text"; text: string }[];
      encrypted_content?: string;
      content?: { type: "reasoning_text"; text: string }[];
    };

/**
 * Our messages as Responses API input items. An assistant turn becomes its text (if any) and a
 * `function_call` item per call; a tool message the `function_call_output` answering its call.
 * A user turn's or a tool result's content parts become Responses parts (`toResponsesParts`): this
 * API takes a tool result's images and files in the `function_call_output` itself.
 * Reasoning items go back only to the endpoint and model that wrote them, in the places they
 * had among the turn's items, and, when nothing is stored server-side (`store: false`), only
 * those that carry their encrypted content (an id alone would point at nothing).
 */
export function toResponsesInput(messages: readonly Message[], target: RequestTarget, store: boolean): ResponsesInputItem[] {
  // Plain loops, and no array per assistant turn unless it has reasoning to place: this runs over
  // the whole history on every call.
  const input: ResponsesInputItem[] = [];
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i] as Message;
    switch (message.role) {
      case "system":
        input.push({ role: "system", content: message.content });
        break;
      case "user": {
        const content = message.content;
        input.push({ role: "user", content: typeof content === "string" ? content : toResponsesParts(content, (part) => partPlace(i, "user", part)) });
        break;
      }
      case "tool": {
        const content = message.content;
        input.push({ type: "function_call_output", call_id: message.toolCallId, output: typeof content === "string" ? content : toResponsesParts(content, (part) => partPlace(i, "tool", part)) });
        break;
      }
      case "assistant": {
        const reasoning = message.reasoningItems;
        const kept = reasoning !== undefined && readableBy(reasoning, target.endpoint, target.model) ? reasoning.items.filter((item) => store || item.encryptedContent !== undefined) : undefined;
        if (kept === undefined || kept.length === 0) pushAnswers(input, message);
        else input.push(...withReasoning(message, kept));
        break;
      }
    }
  }
  return input;
}

/** An assistant turn's own items: its text (if any), then a `function_call` item per call. */
function pushAnswers(input: ResponsesInputItem[], message: AssistantMessage): void {
  if (message.content) input.push({ role: "assistant", content: message.content });
  const calls = message.toolCalls;
  if (calls === undefined) return;
  for (let c = 0; c < calls.length; c++) {
    const call = calls[c] as ToolCall;
    input.push({ type: "function_call", call_id: call.id, name: call.name, arguments: call.arguments });
  }
}

/** An assistant turn's items with its reasoning items back in the places they had among them (`after`). */
function withReasoning(message: AssistantMessage, kept: readonly ReasoningItem[]): ResponsesInputItem[] {
  const answers: ResponsesInputItem[] = [];
  pushAnswers(answers, message);
  const out: ResponsesInputItem[] = [];
  for (let k = 0; k <= answers.length; k++) {
    for (const item of kept) if (Math.min(item.after, answers.length) === k) out.push(reasoningInput(item));
    if (k < answers.length) out.push(answers[k] as ResponsesInputItem);
  }
  return out;
}

/** A reasoning item as the server wrote it (id, summary, encrypted content), to be read back. */
function reasoningInput(item: ReasoningItem): ResponsesInputItem {
  const wire: Extract<ResponsesInputItem, { type: "reasoning" }> = {
    type: "reasoning",
    id: item.id,
    summary: item.summary.map((text) => ({ type: "summary_text", text })),
  };
  if (item.encryptedContent !== undefined) wire.encrypted_content = item.encryptedContent;
  if (item.content !== undefined) wire.content = item.content.map((text) => ({ type: "reasoning_text", text }));
  return wire;
}

/** `tool_choice` in the Responses API's form: a named function is `{ type, name }`. */
function responsesToolChoice(choice: unknown): unknown {
  if (typeof choice !== "object" || choice === null) return choice;
  const named = (choice as { type?: unknown; function?: { name?: unknown } }).function?.name;
  return named !== undefined ? { type: "function", name: named } : choice;
}

/** Chat Completions' `response_format` as the Responses API's `text.format` (json_schema's fields move up a level). */
function textFormat(format: unknown): unknown {
  if (typeof format !== "object" || format === null) return format;
  const { json_schema: schema, ...rest } = format as { json_schema?: Record<string, unknown> };
  return schema === undefined ? rest : { ...rest, ...schema };
}

/**
 * The JSON body of one Responses API attempt, from the same request a Chat Completions attempt is
 * built from. `extraParams` go in first, as there, and Chat Completions' names the machine itself
 * sends (`response_format` from a native structured output, a `tool_choice` naming a function) are
 * translated. Function tools are sent with `strict: false`: the Responses API makes them strict
 * unless told otherwise, and strict mode refuses schemas with optional properties. `store` is
 * false unless configured (the whole conversation is sent every round), and a model configured
 * with `reasoning` is asked for its reasoning's encrypted content then, so it can be sent back.
 */
export function buildResponsesBody(request: ModelRequest, target: RequestTarget, stream: boolean, tuning: EndpointTuning): Record<string, unknown> {
  const body = copyExtraParams(request.extraParams);
  const format = body["response_format"];
  if (format !== undefined) {
    delete body["response_format"];
    body["text"] = { ...(body["text"] as object | undefined), format: textFormat(format) };
  }
  body["model"] = target.model;
  const store = typeof body["store"] === "boolean" ? body["store"] : (tuning.store ?? false);
  body["input"] = toResponsesInput(request.messages, target, store);
  if (request.tools.length > 0) body["tools"] = responsesTools(request.tools);
  const toolChoice: ToolChoice | unknown = request.toolChoice ?? body["tool_choice"];
  if (toolChoice !== undefined) body["tool_choice"] = responsesToolChoice(toolChoice);
  if (request.temperature !== undefined) body["temperature"] = request.temperature;
  if (request.maxTokens !== undefined) body["max_output_tokens"] = request.maxTokens;
  if (request.topP !== undefined) body["top_p"] = request.topP;
  if (request.topK !== undefined) body["top_k"] = request.topK;
  if (body["reasoning"] === undefined && tuning.reasoning !== undefined) body["reasoning"] = tuning.reasoning;
  body["store"] = store;
  if (body["reasoning"] !== undefined && !store) {
    const include = Array.isArray(body["include"]) ? (body["include"] as unknown[]) : [];
    if (!include.includes(ENCRYPTED_REASONING)) body["include"] = [...include, ENCRYPTED_REASONING];
  }
  body["stream"] = stream;
  return body;
}

const ENCRYPTED_REASONING = "reasoning.encrypted_content";

/**
 * The tools in the Responses API's form. A run's tool schemas are one unchanging array (the LLM step
 * caches them per tool list), so each array is converted once, not on every call.
 */
const convertedTools = new WeakMap<readonly FunctionSchema[], ResponsesTool[]>();

interface ResponsesTool {
  type: "function";
  name: string;
  description: string;
  parameters: Record<string, unknown>;
  strict: false;
}

function responsesTools(tools: readonly FunctionSchema[]): ResponsesTool[] {
  let converted = convertedTools.get(tools);
  if (converted === undefined) {
    converted = tools.map(({ function: fn }) => ({ type: "function", name: fn.name, description: fn.description, parameters: fn.parameters, strict: false }));
    convertedTools.set(tools, converted);
  }
  return converted;
}
