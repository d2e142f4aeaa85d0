import type { Message, PartsContent } from "../actors/messages.js";
import { describePart, mediaKindOf } from "../actors/content-parts.js";

/*
 * Message content in the shape the GenAI conventions give `gen_ai.input.messages` and
 * `gen_ai.output.messages` (recorded on spans as JSON text). Only built when content is asked for.
 */

type Part =
  | { type: "text"; content: string }
  | { type: "tool_call"; id: string; name: string; arguments: string }
  | { type: "tool_call_response"; id: string; response: string }
  | { type: "uri"; modality: "image" | "audio" | "file"; mime_type?: string; uri: string };

/** The conversation a model call was sent, every text passed through `redact`. */
export function inputMessages(messages: readonly Message[], redact: (text: string) => string): string {
  return JSON.stringify(
    messages.map((message) => {
      const parts: Part[] = [];
      if (message.role === "tool") {
        const content = message.content;
        parts.push({ type: "tool_call_response", id: message.toolCallId, response: redact(typeof content === "string" ? content : textParts(content)) });
        if (typeof content !== "string") parts.push(...mediaParts(content, redact));
      } else if (typeof message.content !== "string" && message.content !== null) {
        for (const part of message.content) parts.push(...(part.type === "text" ? [{ type: "text" as const, content: redact(part.text) }] : mediaParts([part], redact)));
      } else {
        if (message.content !== null && message.content !== "") parts.push({ type: "text", content: redact(message.content) });
        if (message.role === "assistant") {
          for (const call of message.toolCalls ?? []) parts.push({ type: "tool_call", id: call.id, name: call.name, arguments: redact(call.arguments) });
        }
      }
      return { role: message.role, parts };
    }),
  );
}

function textParts(parts: Exclude<PartsContent, string>): string {
  return parts.flatMap((part) => (part.type === "text" ? [part.text] : [])).join("\n");
}

/**
 * Images and files: one at a URL as a `uri` part; bytes given inline are not copied into a span
 * (they can be megabytes), a text part describes them instead.
 */
function mediaParts(parts: Exclude<PartsContent, string>, redact: (text: string) => string): Part[] {
  const out: Part[] = [];
  for (const part of parts) {
    if (part.type === "text") continue;
    if (part.url !== undefined && !part.url.startsWith("data:")) {
      const uri: Part = { type: "uri", modality: mediaKindOf(part), uri: redact(part.url) };
      if (part.mediaType !== undefined) uri.mime_type = part.mediaType;
      out.push(uri);
    } else {
      out.push({ type: "text", content: `[${describePart(part)}]` });
    }
  }
  return out;
}

/** What the model answered (the streamed text; its tool calls are on the `execute_tool` spans). */
export function outputMessages(text: string, finishReason: string | null): string {
  return JSON.stringify([{ role: "assistant", parts: text === "" ? [] : [{ type: "text", content: text }], finish_reason: finishReason ?? "stop" }]);
}
