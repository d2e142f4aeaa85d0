import { argumentsText, toUsage, usageDistrusted, type Completion } from "./openai-wire-schemas.js";
import type { TurnParts } from "./stream-merge.js";
import { finalToolCall } from "./tool-call-ids.js";

/**
 * A whole (non-streamed) `chat.completion` as a turn. Tolerates what servers really send:
 * `content` missing (Groq), null (vLLM) or "" beside tool calls (xAI, DeepSeek, Qwen, Ollama);
 * tool calls with a stray `index` key or an empty id (Gemini). Returns undefined when there is
 * no choice to read.
 */
export function readCompletion(completion: Completion): TurnParts | undefined {
  const choice = firstChoice(completion.choices);
  if (!choice) return undefined;
  const message = choice.message;
  const calls = message.tool_calls ?? [];
  const toolCalls: TurnParts["toolCalls"] = new Array(calls.length);
  for (let i = 0; i < calls.length; i++) {
    const call = calls[i] as (typeof calls)[number];
    const fn = call.function;
    toolCalls[i] = finalToolCall(call.id ?? "", fn?.name ?? "", argumentsText(fn?.arguments));
  }
  const turn: TurnParts = {
    content: message.content ?? "",
    toolCalls,
    usage: toUsage(completion.usage),
    finishReason: choice.finish_reason ?? null,
  };
  if (message.refusal) turn.refusal = message.refusal;
  const reasoning = message.reasoning_content ?? message.reasoning;
  if (reasoning) turn.reasoning = reasoning;
  if (!completion.usage || usageDistrusted(completion.usage)) turn.usageMissing = true;
  if (completion.model) turn.serverModel = completion.model;
  return turn;
}

/** Choice 0 (an `n > 1` answer lists several), else whichever comes first. */
function firstChoice<C extends { index?: number | null | undefined }>(choices: readonly C[]): C | undefined {
  for (let i = 0; i < choices.length; i++) {
    const choice = choices[i] as C;
    if ((choice.index ?? 0) === 0) return choice;
  }
  return choices[0];
}
