import { z } from "zod";
import type { Message, PartsContent } from "../messages.js";
import { describePart, hasMedia, partPlace } from "../content-parts.js";
import { fromChatParts, toChatParts, type ChatContentPart } from "./content-parts-wire.js";
import type { ModelRequest } from "../model-client.js";
import type { ModelApi, ReasoningOptions } from "../model-api.js";

/** Per-endpoint differences in what the server accepts. */
export interface EndpointTuning {
  /**
   * Send `stream_options: {include_usage: true}` on streamed calls. On by default (OpenAI, vLLM,
   * llama.cpp and Ollama only report usage in a stream when asked); turn it off for servers that
   * reject the field.
   */
  streamUsage: boolean;
  /**
   * Which name carries `maxTokens`. OpenAI deprecated `max_tokens` and its reasoning models reject
   * it ("Use 'max_completion_tokens' instead"), while many compatible servers only know
   * `max_tokens`; so the default is `max_completion_tokens` for api.openai.com and `max_tokens`
   * everywhere else.
   */
  maxTokensParam: "max_tokens" | "max_completion_tokens";
  /** Which API the endpoint is spoken to with: Chat Completions (`chat`, the default) or Responses. */
  api: ModelApi;
  /**
   * A reasoning model's settings. Responses: sent as `reasoning` (and, with `store: false`, the
   * reasoning's encrypted content is asked for, so it can be sent back); Chat Completions: the
   * effort as `reasoning_effort`. Absent for models that do not reason (asking them for encrypted
   * reasoning is an HTTP 400).
   */
  reasoning?: ReasoningOptions | undefined;
  /** Responses only: let the server keep the response (`store`); default false. */
  store?: boolean | undefined;
}


export type WireMessage =
  | { role: "system"; content: string }
  | { role: "user"; content: string | ChatContentPart[] }
  | {
      role: "assistant";
      content: string | null;
      tool_calls?: { id: string; type: "function"; function: { name: string; arguments: string } }[];
    }
  | { role: "tool"; tool_call_id: string; content: string };

/**
 * Our messages in Chat Completions form. An assistant turn that only calls tools is sent with
 * `content: null` (what OpenAI itself produces); one without tool calls always carries a string,
 * because several servers reject a null content there. A tool message's `name` and `isError`
 * stay on our side: the API has no such fields (the content already says what went wrong).
 * A user turn with parts becomes an array of Chat parts (`toChatParts`). Plain loops: this runs
 * over the whole history on every call.
 */
export function toWireMessages(messages: readonly Message[]): WireMessage[] {
  if (!hasToolMedia(messages)) {
    const wire: WireMessage[] = new Array(messages.length);
    for (let i = 0; i < messages.length; i++) wire[i] = toWireMessage(messages[i] as Message, i);
    return wire;
  }
  return withToolMediaFollowUps(messages);
}

function toWireMessage(message: Message, index: number): WireMessage {
  switch (message.role) {
    case "system":
      return { role: "system", content: message.content };
    case "user": {
      const content = message.content;
      return { role: "user", content: typeof content === "string" ? content : toChatParts(content, (part) => partPlace(index, "user", part)) };
    }
    case "assistant": {
      const calls = message.toolCalls;
      if (calls === undefined || calls.length === 0) return { role: "assistant", content: message.content ?? "" };
      const toolCalls: NonNullable<Extract<WireMessage, { role: "assistant" }>["tool_calls"]> = new Array(calls.length);
      for (let i = 0; i < calls.length; i++) {
        const call = calls[i] as (typeof calls)[number];
        toolCalls[i] = { id: call.id, type: "function", function: { name: call.name, arguments: call.arguments } };
      }
      return { role: "assistant", content: message.content === "" ? null : message.content, tool_calls: toolCalls };
    }
    case "tool":
      return { role: "tool", tool_call_id: message.toolCallId, content: typeof message.content === "string" ? message.content : toolText(message.content) };
  }
}

function hasToolMedia(messages: readonly Message[]): boolean {
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i]!;
    if (message.role === "tool" && hasMedia(message.content)) return true;
  }
  return false;
}

/**
 * A Chat Completions tool message carries text only. A tool result's images and files therefore
 * travel in a user message right after the batch's tool messages (a user turn between two answers
 * of one batch would break the API's rule that every call of an assistant turn is answered first),
 * introduced by the call they belong to; the tool message says they follow. pydantic-ai does the
 * same on this API (test/fixtures/openai/pydantic-ai/test_openai/test_image_as_binary_content_tool_response.yaml
 * is OpenAI accepting it); the Responses API takes them in the `function_call_output` itself.
 * This follow-up exists only on the wire: the conversation keeps the tool result as it was.
 */
function withToolMediaFollowUps(messages: readonly Message[]): WireMessage[] {
  const wire: WireMessage[] = [];
  let pending: ChatContentPart[] = [];
  const flush = () => {
    if (pending.length > 0) wire.push({ role: "user", content: pending });
    pending = [];
  };
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i]!;
    if (message.role !== "tool") flush();
    wire.push(toWireMessage(message, i));
    if (message.role !== "tool" || typeof message.content === "string" || !hasMedia(message.content)) continue;
    const media = message.content.flatMap((part, index) => (part.type === "text" ? [] : [{ part, index }]));
    const parts = toChatParts(media.map((m) => m.part), (n) => partPlace(i, "tool", media[n]!.index));
    pending.push({ type: "text", text: `${media.length === 1 ? "The attachment" : `The ${media.length} attachments`} of tool result ${message.toolCallId}${message.name ? ` (${message.name})` : ""}:` }, ...parts);
  }
  flush();
  return wire;
}

/** A tool result's text, with a line naming each image or file that follows in the next user message. */
function toolText(parts: Exclude<PartsContent, string>): string {
  const lines: string[] = [];
  for (const part of parts) lines.push(part.type === "text" ? part.text : `[${describePart(part)}: attached in the next message]`);
  return lines.join("\n");
}

/**
 * The request's `extraParams` as the start of a body: they go in first so they can add anything the
 * API knows (`response_format`, `seed`, `n`...) but cannot clobber the fields the request sets; a
 * camelCase `toolChoice` among them is renamed to the API's `tool_choice`.
 */
export function copyExtraParams(extra: Record<string, unknown> | undefined): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  if (extra === undefined) return body;
  // A loop rather than rest-and-spread: one copy, none at all for the usual empty object.
  for (const key in extra) {
    if (key !== "toolChoice" && Object.hasOwn(extra, key)) body[key] = extra[key];
  }
  const extraToolChoice = extra["toolChoice"];
  if (extraToolChoice !== undefined && body["tool_choice"] === undefined) body["tool_choice"] = extraToolChoice;
  return body;
}

/** The JSON body of one Chat Completions attempt (see `copyExtraParams` for `extraParams`). */
export function buildRequestBody(
  request: ModelRequest,
  model: string,
  stream: boolean,
  tuning: EndpointTuning,
): Record<string, unknown> {
  const body = copyExtraParams(request.extraParams);
  body["model"] = model;
  body["messages"] = toWireMessages(request.messages);
  if (request.tools.length > 0) body["tools"] = request.tools;
  if (request.toolChoice !== undefined) body["tool_choice"] = request.toolChoice;
  if (request.temperature !== undefined) body["temperature"] = request.temperature;
  if (request.maxTokens !== undefined) body[tuning.maxTokensParam] = request.maxTokens;
  if (request.topP !== undefined) body["top_p"] = request.topP;
  // Not an OpenAI parameter: only vLLM, llama.cpp, Ollama and the like read it.
  if (request.topK !== undefined) body["top_k"] = request.topK;
  const effort = tuning.reasoning?.effort;
  if (effort !== undefined && body["reasoning_effort"] === undefined) body["reasoning_effort"] = effort;
  body["stream"] = stream;
  if (stream && tuning.streamUsage) body["stream_options"] = { include_usage: true };
  return body;
}

/** Text content as servers and clients send it: a string, or an array of `{type: "text", text}` parts. */
const WireContent = z.union([z.string(), z.array(z.object({ type: z.string(), text: z.string().optional() }).loose())]).nullish();

const WireMessageSchema = z.discriminatedUnion("role", [
  z.object({ role: z.enum(["system", "developer", "user"]), content: WireContent }).loose(),
  z
    .object({
      role: z.literal("assistant"),
      content: WireContent,
      tool_calls: z
        .array(z.object({ id: z.string(), function: z.object({ name: z.string(), arguments: z.string() }).loose() }).loose())
        .nullish(),
    })
    .loose(),
  z.object({ role: z.literal("tool"), tool_call_id: z.string(), content: WireContent }).loose(),
]);

function contentText(content: z.infer<typeof WireContent>): string | null {
  if (content === null || content === undefined) return null;
  if (typeof content === "string") return content;
  return content.map((part) => part.text ?? "").join("");
}

/**
 * The reverse mapping: Chat Completions messages (a stored transcript, a recorded request) as
 * ours. `developer` becomes `system`; extra fields (`reasoning`, `name`) are dropped. Throws a
 * ZodError naming the first message that does not fit.
 */
export function fromWireMessages(messages: unknown): Message[] {
  return z
    .array(WireMessageSchema)
    .parse(messages)
    .map((message): Message => {
      switch (message.role) {
        case "system":
        case "developer":
          return { role: "system", content: contentText(message.content) ?? "" };
        case "user": {
          // A user turn sent as parts stays parts (images, documents and audio among them).
          const content = message.content;
          return { role: "user", content: Array.isArray(content) && content.length > 0 ? fromChatParts(content) : (contentText(content) ?? "") };
        }
        case "assistant": {
          const calls = message.tool_calls ?? [];
          const content = contentText(message.content);
          if (calls.length === 0) return { role: "assistant", content };
          return {
            role: "assistant",
            content,
            toolCalls: calls.map((call) => ({ id: call.id, name: call.function.name, arguments: call.function.arguments })),
          };
        }
        case "tool":
          return { role: "tool", toolCallId: message.tool_call_id, content: contentText(message.content) ?? "" };
      }
    });
}
