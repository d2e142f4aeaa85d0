import type { Message } from "../actors/messages.js";

/*
 * Message content in the shape the GenAI conventions give `gen_ai.input.messages` and
 * `gen_ai.output.messages` (recorded on spans as JSON text). Only built when content is asked for.
 */

type Part =
  | { type: "text"; content: string }
  | { type: "tool_call"; id: string; name: string; arguments: string }
  | { type: "tool_call_response"; id: string; response: string };

/** The conversation a model call was sent, every text passed through `redact`. */
export function inputMessages(messages: readonly Message[], redact: (text: string) => string): string {
  return JSON.stringify(
    messages.map((message) => {
      const parts: Part[] = [];
      if (message.role === "tool") {
        parts.push({ type: "tool_call_response", id: message.toolCallId, response: redact(message.content) });
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

/** What the model answered (the streamed text; its tool calls are on the `execute_tool` spans). */
export function outputMessages(text: string, finishReason: string | null): string {
  return JSON.stringify([{ role: "assistant", parts: text === "" ? [] : [{ type: "text", content: text }], finish_reason: finishReason ?? "stop" }]);
}
