import { ZERO_USAGE } from "../model-client.js";
import { argumentsText, toUsage, type Completion } from "./openai-wire-schemas.js";
import type { TurnParts } from "./stream-merge.js";
import { finalizeToolCall } from "./tool-call-ids.js";

/**
 * A whole (non-streamed) `chat.completion` as a turn. Tolerates what servers really send:
 * `content` missing (Groq), null (vLLM) or "" beside tool calls (xAI, DeepSeek, Qwen, Ollama);
 * tool calls with a stray `index` key or an empty id (Gemini). Returns undefined when there is
 * no choice to read.
 */
export function readCompletion(completion: Completion): TurnParts | undefined {
  const choice = completion.choices.find((c) => (c.index ?? 0) === 0) ?? completion.choices[0];
  if (!choice) return undefined;
  const message = choice.message;
  const toolCalls = (message.tool_calls ?? []).map((call) =>
    finalizeToolCall({
      id: call.id ?? "",
      name: call.function?.name ?? "",
      arguments: argumentsText(call.function?.arguments),
    }),
  );
  const turn: TurnParts = {
    content: message.content ?? "",
    toolCalls,
    usage: completion.usage ? toUsage(completion.usage) : { ...ZERO_USAGE },
    finishReason: choice.finish_reason ?? null,
  };
  if (message.refusal) turn.refusal = message.refusal;
  const reasoning = message.reasoning_content ?? message.reasoning;
  if (reasoning) turn.reasoning = reasoning;
  if (!completion.usage) turn.usageMissing = true;
  if (completion.model) turn.serverModel = completion.model;
  return turn;
}
