import type { LanguageModelUsage, TextStreamPart, Tool } from "ai";
import type { ToolCall } from "../messages.js";
import type { ModelTurn, Usage } from "../model-client.js";
import { tokenCount } from "../model-client.js";

/** What the reader tells the caller as the stream goes (each only when someone listens). */
export interface TurnListeners {
  onText(delta: string): void;
  onReasoning(delta: string): void;
  onToolArguments?: ((call: { index: number; name: string; arguments: string }) => void) | undefined;
}

/** A stream that failed: the SDK's error, and whether output had already reached the caller. */
export class StreamFailure {
  constructor(
    readonly error: unknown,
    readonly delivered: boolean,
  ) {}
}

/**
 * Reads one `streamText` call's full stream into a turn. An `error` part (the provider's HTTP
 * error, a broken stream) comes back as a `StreamFailure` rather than thrown, with whether text
 * had gone out; the caller decides whether it may try again.
 */
export async function readTurn(stream: AsyncIterable<TextStreamPart<Record<string, Tool>>>, model: string, listeners: TurnListeners): Promise<ModelTurn | StreamFailure> {
  let content = "";
  let reasoning = "";
  let delivered = false;
  const calls: ToolCall[] = [];
  // A call's arguments as the model streamed them, by the SDK's id: sent back verbatim, as jianmu keeps them.
  const streamed = new Map<string, { index: number; name: string; text: string }>();
  let finish: Extract<TextStreamPart<Record<string, Tool>>, { type: "finish" }> | undefined;
  let serverModel: string | undefined;
  for await (const part of stream) {
    switch (part.type) {
      case "text-delta":
        if (part.text === "") break;
        content += part.text;
        delivered = true;
        listeners.onText(part.text);
        break;
      case "reasoning-delta":
        if (part.text === "") break;
        reasoning += part.text;
        delivered = true;
        listeners.onReasoning(part.text);
        break;
      case "tool-input-start":
        streamed.set(part.id, { index: streamed.size, name: part.toolName, text: "" });
        break;
      case "tool-input-delta": {
        const call = streamed.get(part.id);
        if (call === undefined || part.delta === "") break;
        call.text += part.delta;
        listeners.onToolArguments?.({ index: call.index, name: call.name, arguments: call.text });
        break;
      }
      case "tool-call": {
        if (part.providerExecuted === true) break;
        const raw = streamed.get(part.toolCallId)?.text;
        const args = raw !== undefined && raw !== "" ? raw : typeof part.input === "string" ? part.input : JSON.stringify(part.input ?? {});
        calls.push({ id: part.toolCallId, name: part.toolName, arguments: args });
        break;
      }
      case "finish-step":
        serverModel = part.response.modelId;
        break;
      case "finish":
        finish = part;
        break;
      case "error":
        return new StreamFailure(part.error, delivered);
      default:
        break;
    }
  }
  if (finish === undefined) return new StreamFailure(new Error("the stream ended without a finish part"), delivered);
  const { usage, missing } = usageOf(finish.totalUsage);
  const turn: ModelTurn = { content, toolCalls: calls, usage, finishReason: finishReasonOf(finish.finishReason), model };
  if (reasoning !== "") turn.reasoning = reasoning;
  if (missing) turn.usageMissing = true;
  if (serverModel !== undefined && serverModel !== model) turn.serverModel = serverModel;
  return turn;
}

/** The SDK's usage in jianmu's terms; its details (reasoning, cache reads) when the provider reported them. */
export function usageOf(reported: LanguageModelUsage): { usage: Usage; missing: boolean } {
  const promptTokens = tokenCount(reported.inputTokens);
  const completionTokens = tokenCount(reported.outputTokens);
  const usage: Usage = {
    promptTokens: promptTokens ?? 0,
    completionTokens: completionTokens ?? 0,
    totalTokens: tokenCount(reported.totalTokens) ?? (promptTokens ?? 0) + (completionTokens ?? 0),
  };
  const reasoningTokens = tokenCount(reported.outputTokenDetails?.reasoningTokens ?? reported.reasoningTokens);
  const cached = tokenCount(reported.inputTokenDetails?.cacheReadTokens ?? reported.cachedInputTokens);
  if (reasoningTokens !== undefined) usage.reasoningTokens = reasoningTokens;
  if (cached !== undefined) usage.cachedPromptTokens = cached;
  return { usage, missing: promptTokens === undefined && completionTokens === undefined };
}

/** The SDK's finish reasons (`tool-calls`, `content-filter`) as the Chat Completions words the loop reads (`tool_calls`, ...). */
function finishReasonOf(reason: string): string {
  return reason.replace("-", "_");
}
