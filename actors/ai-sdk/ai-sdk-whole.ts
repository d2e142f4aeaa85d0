import type { LanguageModelUsage } from "ai";
import type { ModelTurn } from "../model-client.js";
import { TurnBuilder, violatedFinishReason, type TurnListeners } from "./ai-sdk-turn.js";

/** One part of a whole answer: `generateText`'s content, or the provider's own on AI SDK 7's violation error. */
type ContentPart =
  | { type: "text"; text: string }
  | { type: "reasoning"; text: string; providerMetadata?: Record<string, Record<string, unknown>> | undefined }
  | { type: "tool-call"; toolCallId: string; toolName: string; input: unknown; providerExecuted?: boolean | undefined }
  | { type: string };

/** What jianmu reads of a `generateText` result (one step: the agent runs the tools, not the SDK). */
export interface WholeAnswer {
  readonly content: readonly ContentPart[];
  readonly finishReason: string;
  readonly totalUsage: LanguageModelUsage;
  readonly response: { readonly modelId: string };
}

/**
 * A whole answer as a jianmu turn: the same builder a stream feeds, fed each content part once, so
 * a listener hears the text and the reasoning as one delta each (`streamingOutput` works either way).
 * A call's arguments are the SDK's parsed input, written back as JSON (the raw text when the SDK
 * could not parse it: the loop then tells the model).
 */
export function wholeTurn(answer: WholeAnswer, source: { endpoint: string; model: string }, listeners: TurnListeners): ModelTurn {
  const turn = readContent(answer.content, source, listeners);
  turn.servedBy(answer.response.modelId);
  turn.finished(answer.finishReason, answer.totalUsage);
  return turn.build()!;
}

/**
 * AI SDK 7 throws a `ToolChoiceViolationError` from `generateText` when the model answered without
 * the tool a request forced. It carries the model's answer and its finish reason, not its usage: the
 * answer stands (as it does streamed, and on AI SDK 6), with its usage missing. Undefined for any other error.
 */
export function violationTurn(error: unknown, source: { endpoint: string; model: string }, listeners: TurnListeners): ModelTurn | undefined {
  const finishReason = violatedFinishReason(error);
  if (finishReason === undefined) return undefined;
  const content = (error as { content?: unknown }).content;
  if (!Array.isArray(content)) return undefined;
  const turn = readContent(content as ContentPart[], source, listeners);
  turn.finished(finishReason, undefined);
  return turn.build()!;
}

function readContent(content: readonly ContentPart[], source: { endpoint: string; model: string }, listeners: TurnListeners): TurnBuilder {
  const turn = new TurnBuilder(source, listeners);
  let blocks = 0;
  for (const part of content) {
    if (isPart(part, "text")) turn.text(part.text);
    // Each reasoning part is a block of its own, named in order as a stream's unnamed blocks are.
    else if (isPart(part, "reasoning")) turn.reasoning(`reasoning-${blocks++}`, part.text, part.providerMetadata);
    else if (isPart(part, "tool-call")) turn.call(part);
  }
  return turn;
}

function isPart<T extends "text" | "reasoning" | "tool-call">(part: ContentPart, type: T): part is Extract<ContentPart, { type: T }> {
  return part.type === type;
}
