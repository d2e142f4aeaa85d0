import { getEventListeners } from "node:events";
import { inspect } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { human } from "../../actors/messages.js";
import { ModelError, type ModelRequest } from "../../actors/model-client.js";
import { replies, splitEvents, type Reply, type SseReply } from "../../testing/openai-server.js";
import { loadRecording } from "../../testing/recordings.js";
import { responsesTextTurn, responsesToolCallTurn } from "../../testing/responses-turns.js";
import { caught, clientFor, closeServers, eventLog, fixture, SECRET_KEY, serve } from "./harness.js";

/*
 * The Responses path under the same faults the Chat Completions path is tested with
 * (faults.test.ts): retries and their waits, dropped and truncated streams, timeouts, cancellation,
 * fallbacks, bad events and secrets, all over real HTTP through the SDK's `responses` resource.
 */

afterEach(closeServers);

/** A real streamed text reply (gpt-4o, pydantic-ai's cassette): 7 text deltas after 4 opening events. */
const TEXT_STREAM = loadRecording(fixture("pydantic-ai/test_openai_responses/test_openai_responses_stream.yaml")).interactions[1]!.reply as SseReply;
const TEXT = "The capital of France is Paris.";
/** created, in_progress, output_item.added, content_part.added: nothing has reached the caller yet. */
const BEFORE_FIRST_TOKEN = 4;

const REQUEST: ModelRequest = {
  messages: [human("What is the capital of France?")],
  tools: [{ type: "function", function: { name: "get_capital", description: "The capital of a country.", parameters: { type: "object", properties: { country: { type: "string" } } } } }],
  toolChoice: { type: "function", function: { name: "get_capital" } },
};

const responsesClient = (server: Parameters<typeof clientFor>[0], options: Parameters<typeof clientFor>[1] = {}) => clientFor(server, { api: "responses", ...options });

function sequence(...sequenceReplies: Reply[]) {
  let next = 0;
  return () => sequenceReplies[Math.min(next++, sequenceReplies.length - 1)] as Reply;
}

async function waitFor(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 5));
}

/** An SSE body from event objects, as a Responses server writes it. */
function events(...list: Record<string, unknown>[]): SseReply {
  return replies.sse(list.map((event) => `event: ${String(event["type"])}\ndata: ${JSON.stringify(event)}\n\n`).join(""));
}

describe("Responses: requests", () => {
  it("sends the request in the Responses API's shape: input items, function tools not strict, a named tool_choice, max_output_tokens", async () => {
    const server = await serve(() => TEXT_STREAM);
    await responsesClient(server).complete({ ...REQUEST, maxTokens: 50, temperature: 0.2, extraParams: { parallel_tool_calls: false } });
    expect(server.requests[0]!.path).toBe("/v1/responses");
    expect(server.requests[0]!.body).toEqual({
      parallel_tool_calls: false,
      model: "test-model",
      input: [{ role: "user", content: "What is the capital of France?" }],
      tools: [{ type: "function", name: "get_capital", description: "The capital of a country.", parameters: { type: "object", properties: { country: { type: "string" } } }, strict: false }],
      tool_choice: { type: "function", name: "get_capital" },
      temperature: 0.2,
      max_output_tokens: 50,
      store: false,
      stream: true,
    });
  });

  it("a native structured output's response_format becomes text.format", async () => {
    const server = await serve(() => TEXT_STREAM);
    const schema = { type: "object", properties: { city: { type: "string" } }, required: ["city"], additionalProperties: false };
    await responsesClient(server).complete({ messages: [human("hi")], tools: [], extraParams: { response_format: { type: "json_schema", json_schema: { name: "final_output", schema, strict: true } } } });
    const body = server.requests[0]!.body as Record<string, unknown>;
    expect(body).not.toHaveProperty("response_format");
    expect(body["text"]).toEqual({ format: { type: "json_schema", name: "final_output", schema, strict: true } });
  });

  it("reasoning settings: sent as reasoning, and with store: false the encrypted content is asked for; Chat Completions gets reasoning_effort", async () => {
    const server = await serve((request) => (request.path.endsWith("/responses") ? TEXT_STREAM : replies.json({ choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }] })));
    await responsesClient(server, { reasoning: { effort: "low", summary: "auto" } }).complete(REQUEST);
    await responsesClient(server, { reasoning: { effort: "low" }, store: true }).complete(REQUEST);
    await clientFor(server, { reasoning: { effort: "low" }, stream: false }).complete(REQUEST);
    const [off, on, chat] = server.requests.map((request) => request.body as Record<string, unknown>);
    expect(off).toMatchObject({ reasoning: { effort: "low", summary: "auto" }, store: false, include: ["reasoning.encrypted_content"] });
    expect(on).toMatchObject({ reasoning: { effort: "low" }, store: true });
    expect(on).not.toHaveProperty("include");
    expect(chat).toMatchObject({ reasoning_effort: "low" });
    expect(chat).not.toHaveProperty("reasoning");
  });

  it("says in its description that it speaks the Responses API, and exposes its model", () => {
    const client = responsesClient({ baseURL: "http://127.0.0.1:9/v1" } as never);
    expect(client.description).toBe("OpenAI-compatible endpoint http://127.0.0.1:9/v1 (Responses API), model test-model");
    expect(client.model).toBe("test-model");
  });

  it("refuses a wrong api or reasoning option, naming the field and the fix", () => {
    expect(() => clientFor({ baseURL: "http://127.0.0.1:9/v1" } as never, { api: "completions" as never })).toThrow(
      'invalid model client options: api: must be "chat" (Chat Completions) or "responses" (the Responses API)',
    );
    expect(() => clientFor({ baseURL: "http://127.0.0.1:9/v1" } as never, { reasoning: { effort: "max" } as never })).toThrow(
      'reasoning.effort: must be one of "none", "minimal", "low", "medium", "high", "xhigh"',
    );
  });
});

describe("Responses: parallel tool calls, streamed", () => {
  it("reads two calls of one reply, reporting each call's arguments as they stream", async () => {
    const server = await serve(() =>
      responsesToolCallTurn([
        { id: "call_a", name: "get_capital", args: { country: "France" } },
        { id: "call_b", name: "get_capital", args: { country: "Japan" } },
      ]),
    );
    const streamed: { index: number; name: string; arguments: string }[] = [];
    const turn = await responsesClient(server).complete(REQUEST, { onToolArguments: (call) => streamed.push({ ...call }) });
    expect(turn.toolCalls).toEqual([
      { id: "call_a", name: "get_capital", arguments: '{"country":"France"}' },
      { id: "call_b", name: "get_capital", arguments: '{"country":"Japan"}' },
    ]);
    expect(turn.finishReason).toBe("tool_calls");
    expect(streamed.map((call) => [call.index, call.arguments])).toEqual([
      [0, '{"country"'],
      [0, '{"country":"France"}'],
      [1, '{"country"'],
      [1, '{"country":"Japan"}'],
    ]);
  });
});

describe("Responses: retries, truncated streams, timeouts", () => {
  it("honours retry-after-ms on a 429, then succeeds", async () => {
    const server = await serve(sequence(replies.rateLimited({ ms: 30 }), TEXT_STREAM));
    const log = eventLog();
    const waits: number[] = [];
    const turn = await responsesClient(server, { sleep: async (ms) => void waits.push(ms) }).complete(REQUEST, { onEvent: log.onEvent });
    expect(turn.content).toBe(TEXT);
    expect(waits).toEqual([30]);
    expect(log.ofType("model.call.failed")).toMatchObject([{ attempt: 1, status: 429, kind: "http", code: "rate_limit_exceeded", next: "retry" }]);
  });

  it("retries a stream dropped before the first token reached the caller; the text arrives once", async () => {
    const cut: SseReply = { ...TEXT_STREAM, cut: { afterEvents: BEFORE_FIRST_TOKEN, then: "destroy" } };
    const server = await serve(sequence(cut, TEXT_STREAM));
    const log = eventLog();
    const turn = await responsesClient(server).complete(REQUEST, { onEvent: log.onEvent });
    expect(turn.content).toBe(TEXT);
    expect(log.ofType("text.delta").map((event) => event.delta).join("")).toBe(TEXT);
    expect(log.ofType("model.call.failed")).toMatchObject([{ attempt: 1, kind: "connection", willRetry: true }]);
  });

  it("treats a body that ends cleanly before response.completed as cut off, and retries it", async () => {
    const cut: SseReply = { ...TEXT_STREAM, cut: { afterEvents: BEFORE_FIRST_TOKEN, then: "end" } };
    const server = await serve(sequence(cut, TEXT_STREAM));
    const log = eventLog();
    await responsesClient(server).complete(REQUEST, { onEvent: log.onEvent });
    expect(log.ofType("model.call.failed")).toMatchObject([{ kind: "stream", message: `the stream ended after ${BEFORE_FIRST_TOKEN} events without response.completed` }]);
  });

  it("fails, without retry or fallback, when the stream drops after text reached the caller", async () => {
    const cut: SseReply = { ...TEXT_STREAM, cut: { afterEvents: BEFORE_FIRST_TOKEN + 2, then: "destroy" } };
    const primary = await serve(() => cut);
    const fallback = await serve(() => TEXT_STREAM);
    const log = eventLog();
    const error = (await caught(() => responsesClient(primary, { fallbacks: [{ baseURL: fallback.baseURL, model: "other" }] }).complete(REQUEST, { onEvent: log.onEvent }))) as ModelError;
    expect(error.kind).toBe("connection");
    expect(error.message).toContain("after output had reached the caller, so it was not retried");
    expect(log.ofType("text.delta").map((event) => event.delta)).toEqual(["The", " capital"]);
    expect(fallback.requests).toHaveLength(0);
  });

  it("a reasoning summary that streamed before a drop does not count as output: the call is retried", async () => {
    const reasoned = responsesTextTurn("Paris.", undefined, { reasoning: { summary: ["Thinking about capitals."] } }) as SseReply;
    const cut: SseReply = { ...reasoned, cut: { afterEvents: 4, then: "destroy" } };
    const server = await serve(sequence(cut, reasoned));
    const log = eventLog();
    const turn = await responsesClient(server).complete(REQUEST, { onEvent: log.onEvent });
    expect(turn.content).toBe("Paris.");
    expect(turn.reasoning).toBe("Thinking about capitals.");
    expect(server.requests).toHaveLength(2);
  });

  it("times out a stream that stalls after its first events", async () => {
    const stall: SseReply = { ...TEXT_STREAM, cut: { afterEvents: BEFORE_FIRST_TOKEN, then: "hang" } };
    const server = await serve(sequence(stall, TEXT_STREAM));
    const log = eventLog();
    await responsesClient(server).complete({ ...REQUEST, timeoutMs: 150 }, { onEvent: log.onEvent });
    expect(log.ofType("model.call.failed")).toMatchObject([{ kind: "timeout", message: "no complete answer within 150 ms" }]);
    expect(await server.outcome(0)).toBe("client-closed");
  });
});

describe("Responses: the server's own failures and bad events", () => {
  it("response.failed with server_error is retried; with another code it goes to the fallback", async () => {
    const failed = (code: string) =>
      events({ type: "response.created", response: { id: "r", status: "in_progress", output: [] } }, { type: "response.failed", response: { id: "r", status: "failed", output: [], error: { code, message: `it failed: ${code}` } } });
    const server = await serve(sequence(failed("server_error"), failed("invalid_prompt"), TEXT_STREAM));
    const log = eventLog();
    const turn = await responsesClient(server, { fallbacks: [{ model: "backup" }] }).complete(REQUEST, { onEvent: log.onEvent });
    expect(turn.model).toBe("backup");
    expect(log.ofType("model.call.failed")).toMatchObject([
      { kind: "stream", code: "server_error", message: "it failed: server_error", next: "retry" },
      { kind: "stream", code: "invalid_prompt", next: "fallback" },
    ]);
  });

  it("a flat error event (code, message) ends the attempt as the server's error", async () => {
    const server = await serve(() => events({ type: "response.created", response: { id: "r", status: "in_progress", output: [] } }, { type: "error", code: "rate_limit_exceeded", message: "slow down", param: null }));
    const error = (await caught(() => responsesClient(server, { resilience: { maxRetries: 1, initialDelayMs: 1, maxDelayMs: 2, jitter: 0 } }).complete(REQUEST))) as ModelError;
    expect(error.kind).toBe("stream");
    expect(error.code).toBe("rate_limit_exceeded");
    expect(error.message).toContain("error event in the stream: slow down");
    expect(server.requests).toHaveLength(2);
  });

  it("an event of the wrong shape is an invalid response, not retried", async () => {
    const server = await serve(() => events({ type: "response.output_text.delta", item_id: "m", output_index: 0, delta: 42 }));
    const error = (await caught(() => responsesClient(server).complete(REQUEST))) as ModelError;
    expect(error.kind).toBe("invalid-response");
    expect(error.message).toContain("a stream event is malformed: response.output_text.delta.delta: expected a string");
    expect(server.requests).toHaveLength(1);
  });

  it("a 200 answer that is not an event stream (a proxy's HTML page) is an invalid response naming its type, not retried", async () => {
    const server = await serve(() => ({ kind: "text", status: 200, headers: { "content-type": "text/html" }, body: "<html><body>Please sign in</body></html>" }));
    const error = (await caught(() => responsesClient(server).complete(REQUEST))) as ModelError;
    expect(error.kind).toBe("invalid-response");
    expect(error.message).toContain("the server answered text/html, not an event stream");
    expect(server.requests).toHaveLength(1);
  });

  it("a completed response whose output item has the wrong shape names the field", async () => {
    const server = await serve(() => events({ type: "response.completed", response: { id: "r", status: "completed", output: [{ type: "function_call", call_id: 7, name: "x", arguments: "{}" }] } }));
    const error = (await caught(() => responsesClient(server).complete(REQUEST))) as ModelError;
    expect(error.kind).toBe("invalid-response");
    expect(error.message).toContain("response.completed.response.output.0.call_id");
  });

  it("a whole response with status failed is the server's failure", async () => {
    const server = await serve(() => replies.json({ id: "r", object: "response", status: "failed", output: [], error: { code: "server_error", message: "boom" } }));
    const log = eventLog();
    const error = (await caught(() => responsesClient(server, { stream: false, resilience: { maxRetries: 0 } }).complete(REQUEST, { onEvent: log.onEvent }))) as ModelError;
    expect(error.kind).toBe("stream");
    expect(error.code).toBe("server_error");
    expect(error.message).toContain("boom");
  });

  it("an incomplete reply (max_output_tokens) finishes with reason length", async () => {
    const server = await serve(() =>
      events({ type: "response.incomplete", response: { id: "r", status: "incomplete", incomplete_details: { reason: "max_output_tokens" }, output: [{ type: "message", content: [{ type: "output_text", text: "Par" }] }] } }),
    );
    const turn = await responsesClient(server).complete(REQUEST);
    expect(turn).toMatchObject({ content: "Par", finishReason: "length", usageMissing: true });
  });

  it("a refusal part becomes the turn's refusal", async () => {
    const server = await serve(() => replies.json({ id: "r", object: "response", status: "completed", output: [{ type: "message", content: [{ type: "refusal", refusal: "I can't help with that." }] }] }));
    const turn = await responsesClient(server, { stream: false }).complete(REQUEST);
    expect(turn).toMatchObject({ content: "", refusal: "I can't help with that.", finishReason: "stop" });
  });

  it("a terminal event without output: the finished items it streamed are the turn", async () => {
    const streamed = splitEvents(TEXT_STREAM.body);
    const last = streamed.at(-1)!;
    const empty = last.replace(/"output":\[.*\],"parallel_tool_calls"/, '"output":[],"parallel_tool_calls"');
    expect(empty).not.toBe(last);
    const server = await serve(() => replies.sse([...streamed.slice(0, -1), empty].join("")));
    expect((await responsesClient(server).complete(REQUEST)).content).toBe(TEXT);
  });

  it("...and one of those items of the wrong shape is an invalid response naming the field", async () => {
    const server = await serve(() =>
      events(
        { type: "response.output_item.done", output_index: 0, item: { type: "function_call", call_id: "call_1", name: 7, arguments: "{}" } },
        { type: "response.completed", response: { id: "r", status: "completed", output: [] } },
      ),
    );
    const error = (await caught(() => responsesClient(server).complete(REQUEST))) as ModelError;
    expect(error.kind).toBe("invalid-response");
    expect(error.message).toContain("response.output_item.done.item.name");
  });
});

describe("Responses: cancellation and secrets", () => {
  it("cancels a stream mid-way, and leaves no listener on the caller's signal", async () => {
    const server = await serve(() => ({ ...TEXT_STREAM, delayMs: 100 }));
    const controller = new AbortController();
    const pending = responsesClient(server).complete(REQUEST, { signal: controller.signal, onEvent: (event) => event.type === "text.delta" && controller.abort() });
    expect(((await caught(() => pending)) as ModelError).kind).toBe("aborted");
    expect(await server.outcome(0)).toBe("client-closed");
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
  });

  it("cancels a hung request at once", async () => {
    const server = await serve(() => replies.hang());
    const controller = new AbortController();
    const pending = responsesClient(server).complete(REQUEST, { signal: controller.signal });
    await waitFor(() => server.requests.length === 1);
    controller.abort();
    expect(((await caught(() => pending)) as ModelError).kind).toBe("aborted");
    expect(await server.outcome(0)).toBe("client-closed");
  });

  it("never puts the API key in errors or events, even when the server echoes it", async () => {
    const server = await serve(() => replies.error(401, `Incorrect API key provided: ${SECRET_KEY}.`, { code: "invalid_api_key" }));
    const log = eventLog();
    const error = (await caught(() => responsesClient(server).complete(REQUEST, { onEvent: log.onEvent }))) as ModelError;
    expect(error.status).toBe(401);
    expect(error.message).toContain("Incorrect API key provided: [redacted]");
    expect(server.requests).toHaveLength(1);
    const everything = [error.message, inspect(error, { depth: null }), JSON.stringify(log.events)].join("\n");
    expect(everything).not.toContain(SECRET_KEY);
  });
});
