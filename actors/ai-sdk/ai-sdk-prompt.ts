import { jsonSchema, tool, type ModelMessage, type Tool, type ToolChoice as AiToolChoice } from "ai";
import type { FunctionSchema } from "../../tools/toolset.js";
import { inlineData, partPlace } from "../content-parts.js";
import { unresolvedBlob } from "../content-capabilities.js";
import type { ContentPart, Message, PartsContent, ToolCall } from "../messages.js";
import type { ToolChoice } from "../model-client.js";
import { readableBy } from "../reasoning-items.js";
import type { ProviderOptions } from "./ai-sdk-settings.js";

/*
 * jianmu's request in the AI SDK's terms: its messages as `ModelMessage`s (the provider package
 * then writes its own wire format), its function schemas as tools without `execute` (so the SDK
 * hands the calls back instead of running them), its tool choice.
 */

type UserParts = Extract<ModelMessage, { role: "user" }>["content"];
type ToolOutput = Extract<Extract<ModelMessage, { role: "tool" }>["content"][number], { type: "tool-result" }>["output"];
type OutputParts = Extract<ToolOutput, { type: "content" }>["value"];

/**
 * How images and files are written. A specification v4 model runs only on AI SDK 7, which takes
 * every medium as a `file` part (in a tool result, with tagged data) and warns that the older
 * `image`, `image-data` and `file-data` forms are deprecated; AI SDK 6 knows only those older
 * forms, and a v2 or v3 model may run on it, so such a model gets them.
 */
export type MediaForms = "file" | "legacy";

export function mediaFormsOf(model: { readonly specificationVersion: string }): MediaForms {
  return model.specificationVersion === "v4" ? "file" : "legacy";
}

/**
 * AI SDK 7's tool-result file part. This source compiles against AI SDK 6's types too, which lack
 * it, so it is declared here and written only for a v4 model (`mediaFormsOf`).
 */
interface TaggedFileOutput {
  type: "file";
  mediaType: string;
  filename?: string;
  data: { type: "data"; data: string } | { type: "url"; url: URL };
}

/**
 * The conversation as the AI SDK takes it. An assistant turn's reasoning goes back (with the
 * provider's signature) only to the model that wrote it. Throws `ContentPartError` for a part it cannot carry.
 */
export function toModelMessages(messages: readonly Message[], target: { endpoint: string; model: string }, forms: MediaForms): ModelMessage[] {
  const toolNames = new Map<string, string>();
  return messages.map((message, index): ModelMessage => {
    switch (message.role) {
      case "system":
        return { role: "system", content: message.content };
      case "user":
        return { role: "user", content: typeof message.content === "string" ? message.content : userParts(message.content, index, forms) };
      case "assistant": {
        for (const call of message.toolCalls ?? []) toolNames.set(call.id, call.name);
        const content: Extract<ModelMessage, { role: "assistant" }>["content"] = [];
        const reasoning = message.reasoningItems;
        if (reasoning !== undefined && readableBy(reasoning, target.endpoint, target.model, "ai-sdk")) {
          for (const item of reasoning.items) content.push({ type: "reasoning", text: (item.content ?? item.summary).join(""), ...(item.providerMetadata !== undefined ? { providerOptions: item.providerMetadata as ProviderOptions } : {}) });
        }
        if (message.content) content.push({ type: "text", text: message.content });
        for (const call of message.toolCalls ?? []) content.push({ type: "tool-call", toolCallId: call.id, toolName: call.name, input: parsedArguments(call) });
        return { role: "assistant", content };
      }
      case "tool":
        return {
          role: "tool",
          content: [{ type: "tool-result", toolCallId: message.toolCallId, toolName: message.name ?? toolNames.get(message.toolCallId) ?? "", output: toolOutput(message.content, message.isError === true, index, forms) }],
        };
    }
  });
}

/** The arguments as the model wrote them, parsed; text that is not JSON goes back as the text itself. */
function parsedArguments(call: ToolCall): unknown {
  try {
    return JSON.parse(call.arguments);
  } catch {
    return call.arguments;
  }
}

function userParts(parts: readonly ContentPart[], index: number, forms: MediaForms): UserParts {
  return parts.map((part, p) => {
    if (part.type === "text") return { type: "text", text: part.text };
    const place = partPlace(index, "user", p);
    const source = sourceOf(part, place);
    if (part.type === "file") return { type: "file", data: source.data, mediaType: part.mediaType, ...(part.filename !== undefined ? { filename: part.filename } : {}) };
    // "image" alone: AI SDK 7 tells the subtype from the bytes, as AI SDK 6 does for an image part.
    if (forms === "file") return { type: "file", data: source.data, mediaType: source.mediaType ?? "image" };
    return { type: "image", image: source.data, ...(source.mediaType !== undefined ? { mediaType: source.mediaType } : {}) };
  });
}

/** The bytes as base64 (with their media type), or the http(s) URL for the provider (or the SDK) to fetch. */
function sourceOf(part: Exclude<ContentPart, { type: "text" }>, place: string): { data: string | URL; mediaType?: string | undefined } {
  if (part.blob !== undefined) throw unresolvedBlob(place, part.blob);
  const inline = inlineData(part);
  if (inline) return inline;
  return { data: new URL(part.url!), mediaType: part.mediaType };
}

function toolOutput(content: PartsContent, isError: boolean, index: number, forms: MediaForms): ToolOutput {
  if (typeof content === "string") return { type: isError ? "error-text" : "text", value: content };
  const value: OutputParts = content.map((part, p) => {
    if (part.type === "text") return { type: "text", text: part.text };
    const source = sourceOf(part, partPlace(index, "tool", p));
    const known = source.mediaType ?? part.mediaType;
    if (forms === "file") return taggedFile(part, source.data, known) as unknown as OutputParts[number];
    const mediaType = known ?? "application/octet-stream";
    if (source.data instanceof URL) return part.type === "image" ? { type: "image-url", url: source.data.href } : { type: "file-url", url: source.data.href, mediaType };
    if (part.type === "image") return { type: "image-data", data: source.data, mediaType };
    return { type: "file-data", data: source.data, mediaType, ...(part.filename !== undefined ? { filename: part.filename } : {}) };
  });
  return { type: "content", value };
}

function taggedFile(part: Exclude<ContentPart, { type: "text" }>, data: string | URL, mediaType: string | undefined): TaggedFileOutput {
  return {
    type: "file",
    mediaType: mediaType ?? (part.type === "image" ? "image" : "application/octet-stream"),
    data: data instanceof URL ? { type: "url", url: data } : { type: "data", data },
    ...(part.type === "file" && part.filename !== undefined ? { filename: part.filename } : {}),
  };
}

/** Each function schema as a tool the SDK describes to the model and never runs itself. */
export function toToolSet(tools: readonly FunctionSchema[]): Record<string, Tool> | undefined {
  if (tools.length === 0) return undefined;
  const set: Record<string, Tool> = {};
  for (const { function: fn } of tools) set[fn.name] = tool({ description: fn.description, inputSchema: jsonSchema(fn.parameters) });
  return set;
}

export function toToolChoice(choice: ToolChoice | undefined): AiToolChoice<Record<string, Tool>> | undefined {
  if (choice === undefined || typeof choice === "string") return choice;
  return { type: "tool", toolName: choice.function.name };
}
