import { resolveModelClient } from "../../actors/openai/openai-model-client.js";
import type { ModelClient } from "../../actors/model-client.js";
import { replies, startOpenAIServer, type OpenAIServer, type Reply } from "../../testing/openai-server.js";

/** Scripted turns for the loopback OpenAI-compatible server, as streamed chunks. */

const chunk = (delta: Record<string, unknown>, finish: string | null = null, usage?: Record<string, number>) => ({
  id: "chatcmpl-test",
  object: "chat.completion.chunk",
  created: 1,
  model: "test-model",
  choices: [{ index: 0, delta, finish_reason: finish }],
  ...(usage ? { usage } : {}),
});

const usage = (prompt: number, completion: number) => ({ prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion });

/** A text reply, streamed in the given pieces. */
export function textTurn(pieces: readonly string[], tokens = { prompt: 20, completion: 10 }): Reply {
  return replies.sseFromChunks([
    chunk({ role: "assistant", content: "" }),
    ...pieces.map((piece) => chunk({ content: piece })),
    chunk({}, "stop", usage(tokens.prompt, tokens.completion)),
  ]);
}

/** A reply calling tools (arguments as JSON text or objects). */
export function callTurn(calls: readonly { id: string; name: string; arguments: string | Record<string, unknown> }[], tokens = { prompt: 20, completion: 10 }): Reply {
  return replies.sseFromChunks([
    chunk({
      role: "assistant",
      tool_calls: calls.map((call, index) => ({
        index,
        id: call.id,
        type: "function",
        function: { name: call.name, arguments: typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments) },
      })),
    }),
    chunk({}, "tool_calls", usage(tokens.prompt, tokens.completion)),
  ]);
}

/** One tool call whose arguments stream in the given fragments (as OpenAI sends them). */
export function fragmentedCallTurn(id: string, name: string, fragments: readonly string[]): Reply {
  return replies.sseFromChunks([
    chunk({ role: "assistant", tool_calls: [{ index: 0, id, type: "function", function: { name, arguments: "" } }] }),
    ...fragments.map((fragment) => chunk({ tool_calls: [{ index: 0, function: { arguments: fragment } }] })),
    chunk({}, "tool_calls", usage(20, 10)),
  ]);
}

export interface Loopback {
  server: OpenAIServer;
  client: ModelClient;
  /** The parsed JSON bodies the server received, in order. */
  bodies(): Record<string, unknown>[];
}

/** A loopback server answering request i with turns[i]; past the script, an HTTP 500 the test will see. */
export async function loopback(turns: readonly Reply[], model = "test-model"): Promise<Loopback> {
  const server = await startOpenAIServer({ respond: (request) => turns[request.index] ?? replies.error(500, `no scripted turn #${request.index + 1}`) });
  const client = resolveModelClient({ baseURL: server.baseURL, apiKey: "test-key", model, resilience: { maxRetries: 0 } });
  return { server, client, bodies: () => server.requests.map((r) => r.body as Record<string, unknown>) };
}

/** The function names a request body offered. */
export function toolNames(body: Record<string, unknown>): string[] {
  return ((body["tools"] as { function: { name: string } }[] | undefined) ?? []).map((t) => t.function.name);
}
