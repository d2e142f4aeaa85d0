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

type Part = TextStreamPart<Record<string, Tool>>;

/**
 * Reads one `streamText` call's full stream into a turn. An `error` part (the provider's HTTP
 * error, a broken stream; not AI SDK 7's tool-choice violation, see `answerStands`) comes back as a
 * `StreamFailure` rather than thrown; the caller
 * decides whether it may try again. The attempt's own `signal` ends the read even when the
 * provider's stream does not heed it.
 */
export async function readTurn(stream: ReadableStream<Part>, source: { endpoint: string; model: string }, listeners: TurnListeners, signal: AbortSignal): Promise<ModelTurn | StreamFailure> {
  const turn = new TurnBuilder(source, listeners);
  const reader = stream.getReader();
  const stop = () => void reader.cancel().catch(() => undefined);
  signal.addEventListener("abort", stop, { once: true });
  try {
    for (let next = await reader.read(); !next.done; next = await reader.read()) {
      if (next.value.type === "error") {
        if (turn.answerStands(next.value.error)) continue;
        stop();
        return new StreamFailure(next.value.error);
      }
      turn.add(next.value);
    }
  } finally {
    signal.removeEventListener("abort", stop);
    reader.releaseLock();
  }
  return turn.build() ?? new StreamFailure(new Error("the stream ended without a finish part"));
}

/** A tool call as the SDK reports it: its input parsed, or the raw text when the SDK could not parse it. */
export interface ReportedCall {
  toolCallId: string;
  toolName: string;
  input: unknown;
  providerExecuted?: boolean | undefined;
}

/**
 * The turn as its parts arrive: the answer's text, the reasoning, the tool calls, the finish. A
 * stream feeds it part by part (`add`); a whole answer (`generateText`) feeds the same methods once
 * per content part (ai-sdk-whole.ts).
 */
export class TurnBuilder {
  private content = "";
  private reasoningText = "";
  private readonly calls: ToolCall[] = [];
  /** Each reasoning block with what the provider attached to it (Anthropic's signature), to be sent back. */
  private readonly blocks = new Map<string, Block>();
  /** A call's arguments as the model streamed them, by the SDK's id: sent back verbatim, as jianmu keeps them. */
  private readonly streamed = new Map<string, { index: number; name: string; text: string }>();
  private finishReason: string | undefined;
  private totalUsage: LanguageModelUsage | undefined;
  private serverModel: string | undefined;
  /** The model's own finish reason, when AI SDK 7 reported the answer as a tool-choice violation. */
  private violatedChoice: string | undefined;

  constructor(
    private readonly source: { endpoint: string; model: string },
    private readonly listeners: TurnListeners,
  ) {}

  add(part: Part): void {
    switch (part.type) {
      case "text-delta":
        this.text(part.text);
        return;
      case "reasoning-start":
      case "reasoning-end":
        this.block(part.id).metadata(part.providerMetadata);
        return;
      case "reasoning-delta":
        this.reasoning(part.id, part.text, part.providerMetadata);
        return;
      case "tool-input-start":
        this.streamed.set(part.id, { index: this.streamed.size, name: part.toolName, text: "" });
        return;
      case "tool-input-delta": {
        const call = this.streamed.get(part.id);
        if (call === undefined || part.delta === "") return;
        call.text += part.delta;
        this.listeners.onToolArguments?.({ index: call.index, name: call.name, arguments: call.text });
        return;
      }
      case "tool-call":
        this.call(part);
        return;
      case "finish-step":
        this.servedBy(part.response.modelId);
        return;
      case "finish":
        this.finished(part.finishReason, part.totalUsage);
        return;
      default:
        return;
    }
  }

  text(delta: string): void {
    if (delta === "") return;
    this.content += delta;
    this.listeners.onText(delta);
  }

  /** Reasoning text of one block (`id`, "" when the provider gave none), with what the provider attached to it. */
  reasoning(id: string, delta: string, metadata: ProviderMetadata | undefined): void {
    this.block(id).add(delta, metadata);
    if (delta === "") return;
    this.reasoningText += delta;
    this.listeners.onReasoning(delta);
  }

  call(part: ReportedCall): void {
    if (part.providerExecuted === true) return;
    const raw = this.streamed.get(part.toolCallId)?.text;
    const args = raw !== undefined && raw !== "" ? raw : typeof part.input === "string" ? part.input : JSON.stringify(part.input ?? {});
    this.calls.push({ id: part.toolCallId, name: part.toolName, arguments: args });
  }

  /** The model the provider says answered (it may name a dated version of the one asked for). */
  servedBy(modelId: string): void {
    this.serverModel = modelId;
  }

  /** The answer is complete; `usage` is undefined when the SDK reported none (the turn says it is missing). */
  finished(finishReason: string, usage: LanguageModelUsage | undefined): void {
    this.finishReason = finishReason;
    this.totalUsage = usage;
  }

  /**
   * AI SDK 7 checks a forced tool choice itself and reports an answer without the forced call as
   * a stream error (`ToolChoiceViolationError`), then finishes the stream. The answer is still the
   * model's: the loop judges it, as it does on AI SDK 6 and on jianmu's OpenAI clients, so it stands.
   */
  answerStands(error: unknown): boolean {
    const reason = violatedFinishReason(error);
    if (reason === undefined) return false;
    this.violatedChoice = reason;
    return true;
  }

  /** The turn, or undefined when the answer never finished. */
  build(): ModelTurn | undefined {
    if (this.finishReason === undefined) return undefined;
    const { model, endpoint } = this.source;
    const { usage, missing } = usageOf(this.totalUsage);
    const turn: ModelTurn = { content: this.content, toolCalls: this.calls, usage, finishReason: finishReasonOf(this.violatedChoice ?? this.finishReason), model };
    if (this.reasoningText !== "") turn.reasoning = this.reasoningText;
    if (missing) turn.usageMissing = true;
    if (this.serverModel !== undefined && this.serverModel !== model) turn.serverModel = this.serverModel;
    const items = [...this.blocks.values()].flatMap((block) => block.item());
    if (items.length > 0) turn.reasoningItems = { api: "ai-sdk", endpoint, model, items } satisfies ReasoningItems;
    return turn;
  }

  private block(id: string): Block {
    let block = this.blocks.get(id);
    if (block === undefined) {
      // Where it stood among the answer's items (its text, then each call), as the Responses items say.
      block = new Block(id === "" ? `reasoning-${this.blocks.size}` : id, this.calls.length + (this.content === "" ? 0 : 1));
      this.blocks.set(id, block);
    }
    return block;
  }
}

/** The model's own finish reason when `error` is AI SDK 7's `ToolChoiceViolationError`, else undefined. */
export function violatedFinishReason(error: unknown): string | undefined {
  const violation = error as { name?: unknown; finishReason?: unknown } | undefined;
  return violation?.name === "AI_ToolChoiceViolationError" && typeof violation.finishReason === "string" ? violation.finishReason : undefined;
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

/** The SDK's usage in jianmu's terms; its details (reasoning, cache reads) when the provider reported them. */
function usageOf(reported: LanguageModelUsage | undefined): { usage: Usage; missing: boolean } {
  if (reported === undefined) return { usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 }, missing: true };
  const promptTokens = tokenCount(reported.inputTokens);
  const completionTokens = tokenCount(reported.outputTokens);
  const usage: Usage = {
    promptTokens: promptTokens ?? 0,
    completionTokens: completionTokens ?? 0,
    totalTokens: tokenCount(reported.totalTokens) ?? (promptTokens ?? 0) + (completionTokens ?? 0),
  };
  // AI SDK 6 also has the flat fields (all a v2 model reports); AI SDK 7 dropped them from its type.
  const flat = reported as { reasoningTokens?: number | undefined; cachedInputTokens?: number | undefined };
  const reasoningTokens = tokenCount(reported.outputTokenDetails?.reasoningTokens ?? flat.reasoningTokens);
  const cached = tokenCount(reported.inputTokenDetails?.cacheReadTokens ?? flat.cachedInputTokens);
  if (reasoningTokens !== undefined) usage.reasoningTokens = reasoningTokens;
  if (cached !== undefined) usage.cachedPromptTokens = cached;
  return { usage, missing: promptTokens === undefined && completionTokens === undefined };
}

/** The SDK's finish reasons (`tool-calls`, `content-filter`) as the Chat Completions words the loop reads (`tool_calls`, ...). */
function finishReasonOf(reason: string): string {
  return reason.replace("-", "_");
}
