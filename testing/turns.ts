/**
 * Model turns as the loopback server sends them, for tests and offline demos. Scripted turns:
 * each builder returns the SSE body a real OpenAI endpoint streams for one assistant turn
 * (`chat.completion.chunk` events, a usage chunk, `data: [DONE]`), so the real `openai` client
 * parses it over real HTTP. Recorded turns: real model responses replayed from a fixture file.
 */
import { replies, type Reply, type Respond } from "./openai-server.js";
import { loadRecording } from "./recordings.js";

/** How a loopback server answers, and a few words saying what it replays (for banners). */
export interface TurnReplay {
  respond: Respond;
  /** e.g. "scripted model turns" or "real gpt-4o-mini turns recorded by pydantic-ai's tests". */
  source: string;
}

export interface TurnUsage {
  promptTokens: number;
  completionTokens: number;
  /** Reported as `completion_tokens_details.reasoning_tokens` (Responses: `output_tokens_details`) when given. */
  reasoningTokens?: number;
  /** Reported as `prompt_tokens_details.cached_tokens` (Responses: `input_tokens_details`) when given. */
  cachedPromptTokens?: number;
}

export interface ScriptedCall {
  /** The call id the model gives; approvals and tool results refer to it. */
  id: string;
  name: string;
  args: Record<string, unknown>;
}

const MODEL = "gpt-4o-mini";

function chunk(delta: Record<string, unknown>, finishReason: string | null = null) {
  return {
    id: "chatcmpl-example",
    object: "chat.completion.chunk",
    created: 1_790_000_000,
    model: MODEL,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
  };
}

function usageChunk(usage: TurnUsage) {
  return {
    id: "chatcmpl-example",
    object: "chat.completion.chunk",
    created: 1_790_000_000,
    model: MODEL,
    choices: [],
    usage: {
      prompt_tokens: usage.promptTokens,
      completion_tokens: usage.completionTokens,
      total_tokens: usage.promptTokens + usage.completionTokens,
      ...(usage.cachedPromptTokens !== undefined ? { prompt_tokens_details: { cached_tokens: usage.cachedPromptTokens } } : {}),
      ...(usage.reasoningTokens !== undefined ? { completion_tokens_details: { reasoning_tokens: usage.reasoningTokens } } : {}),
    },
  };
}

/** How a scripted turn is sent: `delayMs` between chunks makes the stream visibly stream (a web page). */
export interface TurnPacing {
  delayMs?: number;
}

const words = (text: string) => text.match(/\S+\s*/g) ?? [text];

/** A turn that streams `text` word by word and ends the run (no tool calls). */
export function textTurn(text: string, usage: TurnUsage = { promptTokens: 200, completionTokens: 30 }, pacing: TurnPacing = {}): Reply {
  return replies.sseFromChunks(
    [chunk({ role: "assistant", content: "" }), ...words(text).map((word) => chunk({ content: word })), chunk({}, "stop"), usageChunk(usage)],
    pacing.delayMs !== undefined ? { delayMs: pacing.delayMs } : {},
  );
}

/**
 * A turn that calls one or more tools; the arguments stream in two fragments, as OpenAI sends them.
 * With `lead`, the turn first streams that text word by word (the model says what it is about to do).
 */
export function toolCallTurn(calls: readonly ScriptedCall[], usage: TurnUsage = { promptTokens: 200, completionTokens: 20 }, pacing: TurnPacing & { lead?: string } = {}): Reply {
  const lead = pacing.lead === undefined ? [] : [chunk({ role: "assistant", content: "" }), ...words(pacing.lead).map((word) => chunk({ content: word }))];
  const chunks = calls.flatMap((call, index) => {
    const args = JSON.stringify(call.args);
    const half = Math.ceil(args.length / 2);
    return [
      chunk({ ...(index === 0 ? { role: "assistant", content: null } : {}), tool_calls: [{ index, id: call.id, type: "function", function: { name: call.name, arguments: "" } }] }),
      chunk({ tool_calls: [{ index, function: { arguments: args.slice(0, half) } }] }),
      chunk({ tool_calls: [{ index, function: { arguments: args.slice(half) } }] }),
    ];
  });
  return replies.sseFromChunks([...lead, ...chunks, chunk({}, "tool_calls"), usageChunk(usage)], pacing.delayMs !== undefined ? { delayMs: pacing.delayMs } : {});
}

/** Answer the n-th request with the n-th turn; past the end, a 500 that says the script ran out. */
export function scriptedTurns(turns: readonly Reply[]): TurnReplay {
  const respond: Respond = (request) =>
    turns[request.index] ?? replies.error(500, `example script: no turn scripted for request ${request.index + 1} (the script has ${turns.length})`);
  return { source: "scripted model turns", respond };
}

/**
 * Replay a recording of real model turns (see test/fixtures/openai/SOURCES.md): the n-th request a
 * server receives gets the n-th recorded reply, so one replay serves any number of servers in turn.
 */
export function recordedTurns(path: string, source: string): TurnReplay {
  const interactions = loadRecording(path).interactions;
  const respond: Respond = (request) =>
    interactions[request.index]?.reply ??
    replies.error(500, `recorded turns: ${path} has ${interactions.length} interaction(s); request ${request.index + 1} has none`);
  return { source, respond };
}
