import type { ReasoningItem, ReasoningItems } from "../reasoning-items.js";
import { argumentsText } from "./openai-wire-schemas.js";
import { AttemptError } from "./model-failure.js";
import type { TurnParts } from "./stream-merge.js";
import { finalToolCall } from "./tool-call-ids.js";
import { responsesUsageDistrusted, toResponsesUsage, type OutputItem, type ReasoningOutputItem, type ResponseObject } from "./responses-wire-schemas.js";

/** Who wrote a reply: its reasoning items are marked with it (see `readableBy`). */
export interface ReplySource {
  endpoint: string;
  model: string;
}

/**
 * A whole Responses reply (a non-streamed body, or a stream's terminal event) as a turn. The
 * answer's text is its `message` items' `output_text` parts, a refusal their `refusal` parts,
 * the tool calls its `function_call` items (identified by `call_id`, which the output answers),
 * and its reasoning its `reasoning` items, kept whole so they can be sent back. `items`, when given,
 * replace `response.output` (a stream whose terminal event came without its output).
 */
export function readResponse(response: ResponseObject, source: ReplySource, items?: readonly OutputItem[]): TurnParts {
  const output = (items ?? response.output ?? []) as OutputItem[];
  let content = "";
  let refusal = "";
  let reasoningText = "";
  const toolCalls: TurnParts["toolCalls"] = [];
  const reasoning: ReasoningItem[] = [];
  // Answer items seen so far (the text counts once), for each reasoning item's place among them.
  let answerItems = 0;
  let sawText = false;
  for (let i = 0; i < output.length; i++) {
    const item = output[i] as OutputItem;
    switch (item.type) {
      case "message":
        for (const part of item.content ?? []) {
          if (part.type === "refusal" && part.refusal) refusal += part.refusal;
          else if (part.text) content += part.text;
        }
        if (!sawText) answerItems += 1;
        sawText = true;
        break;
      case "function_call":
        toolCalls.push(finalToolCall(item.call_id ?? "", item.name ?? "", argumentsText(item.arguments)));
        answerItems += 1;
        break;
      case "reasoning": {
        const text = reasoningTextOf(item);
        if (text !== "") reasoningText += (reasoningText === "" ? "" : "\n\n") + text;
        const kept = keptReasoning(item, answerItems);
        if (kept) reasoning.push(kept);
        break;
      }
    }
  }
  const turn: TurnParts = { content, toolCalls, usage: toResponsesUsage(response.usage), finishReason: finishReasonOf(response, toolCalls.length > 0) };
  if (refusal !== "") turn.refusal = refusal;
  if (reasoningText !== "") turn.reasoning = reasoningText;
  if (reasoning.length > 0) turn.reasoningItems = { api: "responses", endpoint: source.endpoint, model: source.model, items: reasoning } satisfies ReasoningItems;
  if (!response.usage || responsesUsageDistrusted(response.usage)) turn.usageMissing = true;
  if (response.model) turn.serverModel = response.model;
  return turn;
}

/** The summary parts (and raw reasoning text, where a server sends it), in order. */
function reasoningTextOf(item: ReasoningOutputItem): string {
  const parts: string[] = [];
  for (const part of item.summary ?? []) if (part.text) parts.push(part.text);
  for (const part of item.content ?? []) if (part.text) parts.push(part.text);
  return parts.join("\n\n");
}

/** A reasoning item as kept in the conversation; one without an id cannot be sent back, so it is not kept. */
function keptReasoning(item: ReasoningOutputItem, after: number): ReasoningItem | undefined {
  if (!item.id) return undefined;
  const kept: ReasoningItem = { id: item.id, summary: (item.summary ?? []).map((part) => part.text ?? ""), after };
  if (item.encrypted_content) kept.encryptedContent = item.encrypted_content;
  if (item.content && item.content.length > 0) kept.content = item.content.map((part) => part.text ?? "");
  return kept;
}

/**
 * The Chat Completions finish reason the reply amounts to (the Responses API has none): a completed
 * reply is `tool_calls` or `stop`, an incomplete one says why (`max_output_tokens` → `length`).
 */
function finishReasonOf(response: ResponseObject, calledTools: boolean): string | null {
  const status = response.status;
  if (status === "incomplete") {
    const reason = response.incomplete_details?.reason;
    return reason === "max_output_tokens" ? "length" : (reason ?? "incomplete");
  }
  if (status === "completed" || status === undefined || status === null) return calledTools ? "tool_calls" : "stop";
  return status;
}

/** A reply the server itself reported as failed (`status: "failed"`, `response.failed`, an `error` event). */
export function serverFailure(error: { code?: string | null | undefined; message?: string | null | undefined } | null | undefined, delivered: boolean): AttemptError {
  const code = error?.code ?? undefined;
  return new AttemptError({
    category: code === "rate_limit_exceeded" ? "rate_limit" : code === "server_error" ? "server_error" : "stream_error",
    kind: "stream",
    message: error?.message || "the server reported the response as failed",
    delivered,
    serverEvent: true,
    ...(code !== undefined ? { code } : {}),
  });
}
