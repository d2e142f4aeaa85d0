import type { LanguageModelUsage, TextStreamPart, Tool } from "ai";
import type { ToolCall } from "../messages.js";
import type { ReasoningItem, ReasoningItems } from "../reasoning-items.js";
import type { ModelTurn, Usage } from "../model-client.js";
import { tokenCount } from "../model-client.js";

/** What the reader tells the caller as the stream goes (each only when someone listens). */
export interface TurnListeners {
  onText(delta: string): void;
  onReasoning(delta: string): void;
  onToolArguments?: ((call: { index: number; name: string; arguments: string }) => void) | undefined;
}

/** A stream that failed, with the SDK's error (the caller knows whether output had gone out: it listened). */
export class StreamFailure {
  constructor(readonly error: unknown) {}
}

/**
 * Reads one `streamText` call's full stream into a turn. An `error` part (the provider's HTTP
 * error, a broken stream) comes back as a `StreamFailure` rather than thrown; the caller
 * decides whether it may try again.
 */
export async function readTurn(stream: AsyncIterable<TextStreamPart<Record<string, Tool>>>, source: { endpoint: string; model: string }, listeners: TurnListeners): Promise<ModelTurn | StreamFailure> {
  const { model } = source;
  let content = "";
  let reasoning = "";
  const calls: ToolCall[] = [];
  // Each reasoning block with what the provider attached to it (Anthropic's signature), to be sent back.
  const blocks = new Map<string, Block>();
  // A call's arguments as the model streamed them, by the SDK's id: sent back verbatim, as jianmu keeps them.
  const streamed = new Map<string, { index: number; name: string; text: string }>();
  let finish: Extract<TextStreamPart<Record<string, Tool>>, { type: "finish" }> | undefined;
  let serverModel: string | undefined;
  for await (const part of stream) {
    switch (part.type) {
      case "text-delta":
        if (part.text === "") break;
        content += part.text;
        listeners.onText(part.text);
        break;
      case "reasoning-start":
      case "reasoning-end":
        blockOf(blocks, part.id, calls.length + (content === "" ? 0 : 1)).metadata(part.providerMetadata);
        break;
      case "reasoning-delta":
        blockOf(blocks, part.id, calls.length + (content === "" ? 0 : 1)).add(part.text, part.providerMetadata);
        if (part.text === "") break;
        reasoning += part.text;
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
        return new StreamFailure(part.error);
      default:
        break;
    }
  }
  if (finish === undefined) return new StreamFailure(new Error("the stream ended without a finish part"));
  const { usage, missing } = usageOf(finish.totalUsage);
  const turn: ModelTurn = { content, toolCalls: calls, usage, finishReason: finishReasonOf(finish.finishReason), model };
  if (reasoning !== "") turn.reasoning = reasoning;
  if (missing) turn.usageMissing = true;
  if (serverModel !== undefined && serverModel !== model) turn.serverModel = serverModel;
  const items = [...blocks.values()].flatMap((block) => block.item());
  if (items.length > 0) turn.reasoningItems = { api: "ai-sdk", endpoint: source.endpoint, model, items } satisfies ReasoningItems;
  return turn;
}

type ProviderMetadata = Record<string, Record<string, unknown>>;

/** One reasoning block as it streams: its text and the provider's metadata, merged provider by provider. */
class Block {
  private text = "";
  private provider: ProviderMetadata | undefined;
  constructor(
    private readonly id: string,
    private readonly after: number,
  ) {}
  add(text: string, metadata: ProviderMetadata | undefined): void {
    this.text += text;
    this.metadata(metadata);
  }
  metadata(metadata: ProviderMetadata | undefined): void {
    if (metadata === undefined) return;
    this.provider ??= {};
    for (const [name, values] of Object.entries(metadata)) this.provider[name] = { ...this.provider[name], ...values };
  }
  /** Kept only when the provider attached something: plain reasoning text is the turn's `reasoning`, nothing to send back. */
  item(): ReasoningItem[] {
    if (this.provider === undefined) return [];
    return [{ id: this.id, summary: [], content: [this.text], providerMetadata: this.provider, after: this.after }];
  }
}

function blockOf(blocks: Map<string, Block>, id: string, after: number): Block {
  let block = blocks.get(id);
  if (block === undefined) {
    block = new Block(id === "" ? `reasoning-${blocks.size}` : id, after);
    blocks.set(id, block);
  }
  return block;
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
