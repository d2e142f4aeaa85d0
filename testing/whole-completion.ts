import { replies, type Reply } from "./openai-server.js";

/**
 * A streamed Chat Completions turn (an SSE reply: a recording, or the turn builders') as the whole
 * answer a server sends a request that did not ask to stream: one `chat.completion` with the text,
 * the tool calls and the usage the chunks carried. A loopback server that replays streams then also
 * answers a client made with `stream: false`, as a real endpoint does.
 */

interface ChunkCall {
  index?: number;
  id?: string;
  type?: string;
  function?: { name?: string; arguments?: string };
}

interface Chunk {
  id?: string;
  created?: number;
  model?: string;
  choices?: { index?: number; delta?: { role?: string; content?: string | null; refusal?: string | null; tool_calls?: ChunkCall[] }; finish_reason?: string | null }[];
  usage?: unknown;
}

/** The `data:` payloads of an SSE body, parsed (the `[DONE]` marker and comments left out). */
function chunksOf(body: string): Chunk[] {
  const chunks: Chunk[] = [];
  for (const line of body.split(/\r?\n/)) {
    if (!line.startsWith("data:")) continue;
    const data = line.slice("data:".length).trim();
    if (data === "" || data === "[DONE]") continue;
    chunks.push(JSON.parse(data) as Chunk);
  }
  return chunks;
}

/** The chunks of one streamed turn folded into the `chat.completion` they add up to. */
export function wholeCompletion(body: string): Record<string, unknown> {
  const chunks = chunksOf(body);
  let content: string | null = null;
  let finishReason: string | null = null;
  let usage: unknown;
  const calls = new Map<number, { id: string; type: "function"; function: { name: string; arguments: string } }>();
  for (const chunk of chunks) {
    if (chunk.usage) usage = chunk.usage;
    const choice = chunk.choices?.[0];
    if (!choice) continue;
    if (typeof choice.delta?.content === "string") content = (content ?? "") + choice.delta.content;
    for (const part of choice.delta?.tool_calls ?? []) {
      const index = part.index ?? 0;
      const call = calls.get(index) ?? { id: "", type: "function" as const, function: { name: "", arguments: "" } };
      if (part.id) call.id = part.id;
      if (part.function?.name) call.function.name += part.function.name;
      if (part.function?.arguments) call.function.arguments += part.function.arguments;
      calls.set(index, call);
    }
    if (choice.finish_reason) finishReason = choice.finish_reason;
  }
  const first = chunks[0] ?? {};
  const message = { role: "assistant", content: content === "" && calls.size > 0 ? null : content, ...(calls.size > 0 ? { tool_calls: [...calls.entries()].sort(([a], [b]) => a - b).map(([, call]) => call) } : {}) };
  return {
    id: first.id ?? "chatcmpl-whole",
    object: "chat.completion",
    created: first.created ?? 0,
    model: first.model ?? "",
    choices: [{ index: 0, message, finish_reason: finishReason ?? (calls.size > 0 ? "tool_calls" : "stop"), logprobs: null }],
    ...(usage !== undefined ? { usage } : {}),
  };
}

/** `reply` as a request that did not ask to stream gets it: an SSE turn becomes its whole completion; any other reply is sent as it is. */
export function asRequested(reply: Reply, requestBody: unknown): Reply {
  const streaming = (requestBody as { stream?: unknown } | null | undefined)?.stream === true;
  if (streaming || reply.kind !== "sse") return reply;
  return replies.json(wholeCompletion(reply.body));
}
