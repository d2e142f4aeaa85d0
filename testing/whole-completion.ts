import { ChatCompletionStream } from "openai/lib/ChatCompletionStream";
import { replies, type Reply } from "./openai-server.js";

/**
 * A streamed Chat Completions turn (an SSE reply: a recording, or the turn builders') as the whole
 * answer a server sends a request that did not ask to stream: one `chat.completion` with the text,
 * the tool calls and the usage the chunks carried. A loopback server that replays streams then also
 * answers a client made with `stream: false`, as a real endpoint does.
 */

/** The `data:` payloads of an SSE body (the `[DONE]` marker and comments left out), one JSON text each. */
function chunkTexts(body: string): string[] {
  return body
    .split(/\r?\n/)
    .filter((line) => line.startsWith("data:"))
    .map((line) => line.slice("data:".length).trim())
    .filter((data) => data !== "" && data !== "[DONE]");
}

/**
 * The chunks of one streamed turn folded into the `chat.completion` they add up to, by the `openai`
 * SDK's own accumulator (`ChatCompletionStream`, which reads chunks as newline-delimited JSON).
 */
export function wholeCompletion(body: string): Promise<object> {
  const encoder = new TextEncoder();
  const chunks = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const text of chunkTexts(body)) controller.enqueue(encoder.encode(`${text}\n`));
      controller.close();
    },
  });
  return ChatCompletionStream.fromReadableStream(chunks).finalChatCompletion();
}

/** `reply` as a request that did not ask to stream gets it: an SSE turn becomes its whole completion; any other reply is sent as it is. */
export async function asRequested(reply: Reply, requestBody: unknown): Promise<Reply> {
  const streaming = (requestBody as { stream?: unknown } | null | undefined)?.stream === true;
  if (streaming || reply.kind !== "sse") return reply;
  return replies.json(await wholeCompletion(reply.body));
}
