/**
 * Model turns as a Responses API server streams them (`POST /v1/responses`, `stream: true`), for
 * tests and offline demos of `ModelClient.resolve({ api: "responses" })`: named events
 * (`event: response.output_text.delta` ...), no `[DONE]`, the whole response once more on
 * `response.completed`. Shaped like the real recordings in test/fixtures/openai (see SOURCES.md):
 * a reasoning item first when `reasoning` is given (its summary streamed word by word, its
 * encrypted content on the finished item), then the text, then each function call with its
 * arguments in two fragments.
 */
import { createHash } from "node:crypto";
import { replies, type Reply } from "./openai-server.js";
import type { ScriptedCall, TurnPacing, TurnUsage } from "./turns.js";

/** A reasoning item the scripted model writes before it answers. */
export interface ScriptedReasoning {
  /** Its summary parts, streamed as `response.reasoning_summary_text.delta` events. */
  summary: readonly string[];
  /** The opaque blob the model reads back; default: a made-up one derived from the id. */
  encryptedContent?: string;
  /** Default `rs_` + a hash of the turn's content. */
  id?: string;
}

export interface ResponsesTurnOptions extends TurnPacing {
  reasoning?: ScriptedReasoning;
  /** The model the response names (default gpt-5-mini). */
  model?: string;
}

const DEFAULT_MODEL = "gpt-5-mini";

const words = (text: string) => text.match(/\S+\s*/g) ?? [text];

/** A turn that streams `text` (after the reasoning, if any) and ends the run. */
export function responsesTextTurn(text: string, usage: TurnUsage = { promptTokens: 200, completionTokens: 30 }, options: ResponsesTurnOptions = {}): Reply {
  return responsesTurn({ text, calls: [] }, usage, options);
}

/** A turn that calls one or more tools (in parallel, when several), after the reasoning and the `lead` text if any. */
export function responsesToolCallTurn(
  calls: readonly ScriptedCall[],
  usage: TurnUsage = { promptTokens: 200, completionTokens: 20 },
  options: ResponsesTurnOptions & { lead?: string } = {},
): Reply {
  return responsesTurn({ text: options.lead, calls }, usage, options);
}

function responsesTurn(answer: { text: string | undefined; calls: readonly ScriptedCall[] }, usage: TurnUsage, options: ResponsesTurnOptions): Reply {
  const model = options.model ?? DEFAULT_MODEL;
  // Ids from the turn's content: the same script gives the same ids, whatever ran before it.
  const turn = createHash("sha256").update(JSON.stringify([answer, options.reasoning ?? null])).digest("hex").slice(0, 16);
  const id = `resp_${turn}`;
  const events: Record<string, unknown>[] = [];
  const output: Record<string, unknown>[] = [];
  const shell = { id, object: "response", created_at: 1_790_000_000, model, parallel_tool_calls: true, store: false };
  events.push({ type: "response.created", response: { ...shell, status: "in_progress", output: [], usage: null } });
  const reasoning = options.reasoning;
  if (reasoning) {
    const itemId = reasoning.id ?? `rs_${turn}`;
    const item = { id: itemId, type: "reasoning", summary: [] as unknown[], encrypted_content: reasoning.encryptedContent ?? `enc:${itemId}` };
    const output_index = output.length;
    events.push({ type: "response.output_item.added", output_index, item });
    reasoning.summary.forEach((part, summary_index) => {
      events.push({ type: "response.reasoning_summary_part.added", item_id: itemId, output_index, summary_index, part: { type: "summary_text", text: "" } });
      for (const word of words(part)) events.push({ type: "response.reasoning_summary_text.delta", item_id: itemId, output_index, summary_index, delta: word });
      events.push({ type: "response.reasoning_summary_text.done", item_id: itemId, output_index, summary_index, text: part });
    });
    const done = { ...item, summary: reasoning.summary.map((text) => ({ type: "summary_text", text })) };
    events.push({ type: "response.output_item.done", output_index, item: done });
    output.push(done);
  }
  if (answer.text !== undefined) {
    const itemId = `msg_${turn}`;
    const output_index = output.length;
    events.push({ type: "response.output_item.added", output_index, item: { id: itemId, type: "message", status: "in_progress", role: "assistant", content: [] } });
    for (const word of words(answer.text)) events.push({ type: "response.output_text.delta", item_id: itemId, output_index, content_index: 0, delta: word });
    const done = { id: itemId, type: "message", status: "completed", role: "assistant", content: [{ type: "output_text", text: answer.text, annotations: [] }] };
    events.push({ type: "response.output_item.done", output_index, item: done });
    output.push(done);
  }
  answer.calls.forEach((call, index) => {
    const itemId = `fc_${turn}_${index}`;
    const args = JSON.stringify(call.args);
    const half = Math.ceil(args.length / 2);
    const output_index = output.length;
    events.push({ type: "response.output_item.added", output_index, item: { id: itemId, type: "function_call", status: "in_progress", call_id: call.id, name: call.name, arguments: "" } });
    events.push({ type: "response.function_call_arguments.delta", item_id: itemId, output_index, delta: args.slice(0, half) });
    events.push({ type: "response.function_call_arguments.delta", item_id: itemId, output_index, delta: args.slice(half) });
    const done = { id: itemId, type: "function_call", status: "completed", call_id: call.id, name: call.name, arguments: args };
    events.push({ type: "response.output_item.done", output_index, item: done });
    output.push(done);
  });
  events.push({ type: "response.completed", response: { ...shell, status: "completed", output, usage: responsesUsage(usage) } });
  const body = events.map((event, sequence_number) => `event: ${String(event["type"])}\ndata: ${JSON.stringify({ ...event, sequence_number })}\n\n`).join("");
  return replies.sse(body, options.delayMs !== undefined ? { delayMs: options.delayMs } : {});
}

function responsesUsage(usage: TurnUsage) {
  return {
    input_tokens: usage.promptTokens,
    input_tokens_details: { cached_tokens: usage.cachedPromptTokens ?? 0 },
    output_tokens: usage.completionTokens,
    output_tokens_details: { reasoning_tokens: usage.reasoningTokens ?? 0 },
    total_tokens: usage.promptTokens + usage.completionTokens,
  };
}
