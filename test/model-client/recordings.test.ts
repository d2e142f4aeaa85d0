import { afterEach, describe, expect, it } from "vitest";
import { human } from "../../actors/messages.js";
import type { ModelRequest, ModelTurn, Usage } from "../../actors/model-client.js";
import { fromWireMessages } from "../../actors/openai/openai-wire.js";
import type { FunctionSchema } from "../../tools/toolset.js";
import { loadRecording, replayInteractions, type RecordedInteraction } from "../../testing/recordings.js";
import { caught, checkError, clientFor, closeServers, eventLog, fixture, isResponsesRecording, recordingFiles, serve, type ExpectedModelError } from "./harness.js";

afterEach(closeServers);

/** What one recorded response must merge into. Values read off the fixture files by hand. */
interface TurnExpectation {
  content: string | { startsWith: string; length: number };
  toolCalls?: { id: string | RegExp; name: string; args: unknown }[];
  /** prompt, completion, total, and the details the server reported (read off the file). */
  usage: [number, number, number] | [number, number, number, Pick<Usage, "reasoningTokens" | "cachedPromptTokens">] | "missing";
  finishReason: string | null;
  refusal?: string;
  reasoningStartsWith?: string;
  /** Number of `text.delta` events (streams only). */
  textDeltas?: number;
}

interface ErrorExpectation {
  error: ExpectedModelError & { requests?: number };
}

type Expectation = TurnExpectation | ErrorExpectation;

const SYNTHETIC_ID = /^call_[A-Za-z0-9]{24}$/;

/** Single-response recordings. */
const SINGLE: Record<string, Expectation> = {
  "vercel-ai/openai/openai-text.chunks.txt": {
    content: { startsWith: "**Holiday Name:** Harmony Day\n\n**Date:**", length: 1724 },
    usage: [16, 300, 316, { reasoningTokens: 0, cachedPromptTokens: 0 }],
    finishReason: "stop",
    textDeltas: 300,
  },
  "vercel-ai/openai/openai-text.json": {
    content: { startsWith: "**Holiday Name:** Galaxy Day", length: 1842 },
    usage: [16, 363, 379, { reasoningTokens: 0, cachedPromptTokens: 0 }],
    finishReason: "stop",
  },
  "vercel-ai/openai/azure-model-router.1.chunks.txt": {
    content: "Capital of Denmark.",
    usage: [15, 78, 93, { reasoningTokens: 64, cachedPromptTokens: 0 }],
    finishReason: "stop",
    textDeltas: 4,
  },
  "vercel-ai/openai/reasoning-model-legacy-parameter-error.json": {
    error: {
      kind: "http",
      status: 400,
      code: "unsupported_parameter",
      messageContains: ["HTTP 400", "Unsupported parameter: 'max_tokens' is not supported with this model"],
      requests: 1,
    },
  },
  "vercel-ai/openai-compatible/anthropic-fallback-tool-call.sse": {
    content: "Reading it.",
    toolCalls: [{ id: "toolu_sanitized", name: "read_file", args: { path: "a.txt" } }],
    usage: "missing",
    finishReason: "tool_calls",
    textDeltas: 2,
  },
  "vercel-ai/openai-compatible/xai-tool-call.chunks.txt": {
    content: "",
    toolCalls: [{ id: "call_79382389", name: "weather", args: { location: "San Francisco" } }],
    // total_tokens 560 != 307 + 26: the server's total counts reasoning tokens; we keep it.
    usage: [307, 26, 560, { reasoningTokens: 227, cachedPromptTokens: 306 }],
    finishReason: "tool_calls",
    reasoningStartsWith: "First, the user is asking about the weather in San",
    textDeltas: 0,
  },
  "vercel-ai/openai-compatible/xai-tool-call.json": {
    content: "",
    toolCalls: [{ id: "call_46427107", name: "weather", args: { location: "San Francisco" } }],
    usage: [307, 26, 588, { reasoningTokens: 255, cachedPromptTokens: 244 }],
    finishReason: "tool_calls",
    reasoningStartsWith: "First, the user is asking about the weather in San Francisco.",
  },
  "vercel-ai/groq/groq-tool-call.chunks.txt": {
    content: "",
    toolCalls: [{ id: "tk85n1k4m", name: "weather", args: {} }],
    usage: [210, 15, 225],
    finishReason: "tool_calls",
  },
  "vercel-ai/groq/groq-tool-call.json": {
    content: "",
    toolCalls: [{ id: "ax9fskhev", name: "weather", args: {} }],
    usage: [218, 15, 233],
    finishReason: "tool_calls",
  },
  "vercel-ai/deepseek/deepseek-tool-call.chunks.txt": {
    content: "",
    toolCalls: [{ id: "call_00_ioIn7yN9p1ZOMNpDLwd4MgAF", name: "weather", args: { location: "San Francisco" } }],
    usage: [339, 83, 422, { reasoningTokens: 39, cachedPromptTokens: 320 }],
    finishReason: "tool_calls",
    reasoningStartsWith: "The user is asking for the weather in San Francisc",
  },
  "vercel-ai/deepseek/deepseek-tool-call.json": {
    content: "",
    toolCalls: [{ id: "call_00_9V0vrf86Pc9aelHCJMZqnJBo", name: "weather", args: { location: "San Francisco" } }],
    usage: [339, 92, 431, { reasoningTokens: 48, cachedPromptTokens: 320 }],
    finishReason: "tool_calls",
    reasoningStartsWith: "The user is asking for the weather in San Francisco.",
  },
  "vercel-ai/alibaba/alibaba-tool-call.chunks.txt": {
    content: "",
    toolCalls: [{ id: "call_eee11723464a4b9eb8cee71d", name: "weather", args: { location: "San Francisco" } }],
    usage: [295, 22, 317, { cachedPromptTokens: 0 }],
    finishReason: "tool_calls",
  },
  "vercel-ai/alibaba/alibaba-tool-call.json": {
    content: "",
    toolCalls: [{ id: "call_962bfd2ab8f54b89a1161356", name: "weather", args: { location: "San Francisco" } }],
    usage: [295, 22, 317, { cachedPromptTokens: 0 }],
    finishReason: "tool_calls",
  },
  "vercel-ai/mistral/mistral-incremental-tool-call.chunks.txt": {
    content: "",
    toolCalls: [{ id: "chatcmpl-tool-9f149c74c42f265b", name: "webSearchTool", args: { query: "current Berlin weather" } }],
    usage: [171, 14, 185, { cachedPromptTokens: 128 }],
    finishReason: "tool_calls",
  },
  "openai-python/e2aad469b71d1d4894ff833ea147020a9d875eb7ce644a0ff355581690a4cbfd.bin": {
    content:
      "I'm unable to provide real-time weather updates. To get the current weather in San Francisco, I recommend checking a reliable weather website or a weather app.",
    usage: [14, 30, 44, { reasoningTokens: 0 }],
    finishReason: "stop",
    textDeltas: 30,
  },
  "openai-python/c6aa7e397b7123c3501f25df3a05d4daf7e8ad6d61ffa406ab5361fe36a8d5b1.bin": {
    content: "",
    toolCalls: [{ id: "call_c91SqDXlYFuETYv8mUHzz6pp", name: "GetWeatherArgs", args: { city: "Edinburgh", country: "UK", units: "c" } }],
    usage: [76, 24, 100, { reasoningTokens: 0 }],
    finishReason: "tool_calls",
  },
  "openai-python/f82268f2fefd5cfbc7eeb59c297688be2f6ca0849a6e4f17851b517310841d9b.bin": {
    content: "",
    toolCalls: [
      { id: "call_JMW1whyEaYG438VE1OIflxA2", name: "GetWeatherArgs", args: { city: "Edinburgh", country: "GB", units: "c" } },
      { id: "call_DNYTawLBoN8fj3KN6qU9N1Ou", name: "get_stock_price", args: { ticker: "AAPL", exchange: "NASDAQ" } },
    ],
    usage: [149, 60, 209, { reasoningTokens: 0 }],
    finishReason: "tool_calls",
  },
  "openai-python/2018feb66ae13fcf5333d61b95849decc68d3f63bd38172889367e1afb1e04f7.bin": {
    content: "",
    toolCalls: [{ id: "call_4XzlGBLtUe9dy3GVNV4jhq7h", name: "get_weather", args: { city: "New York City" } }],
    usage: [44, 16, 60, { reasoningTokens: 0 }],
    finishReason: "tool_calls",
  },
  "openai-python/173417d553406f034f643e5db3f8d591fb691ebac56f5ae39a22cc7d455c5353.bin": {
    content: "",
    refusal: "I'm sorry, I can't assist with that request.",
    usage: [79, 11, 90, { reasoningTokens: 0 }],
    finishReason: "stop",
    textDeltas: 0,
  },
  "openai-python/4cc50a6135d254573a502310e6af1246f55edb6ad95fa24059f160996b68866d.bin": {
    content: '{"',
    usage: [79, 1, 80, { reasoningTokens: 0 }],
    finishReason: "length",
    textDeltas: 1,
  },
  // n = 3: only choice 0 counts (choices 1 and 2 say 61 and 59 degrees).
  "openai-python/a491adda08c3d4fde95f5b2ee3f60f7f745f1a56d82e62f58031cc2add502380.bin": {
    content: '{"city":"San Francisco","temperature":65,"units":"f"}',
    usage: [79, 42, 121, { reasoningTokens: 0 }],
    finishReason: "stop",
  },
};

/** Cassettes: one expectation per interaction, in order. */
const CASSETTES: Record<string, Expectation[]> = {
  "pydantic-ai/test_openai/test_run_stream_sync_streams_real_model.yaml": [
    {
      content: "",
      toolCalls: [{ id: "call_ZR5UUuTt3pf61kjwAJIYdVMj", name: "get_capital", args: { country: "UK" } }],
      usage: [53, 15, 68, { reasoningTokens: 0, cachedPromptTokens: 0 }],
      finishReason: "tool_calls",
    },
    { content: "The capital of the UK is London.", usage: [78, 9, 87, { reasoningTokens: 0, cachedPromptTokens: 0 }], finishReason: "stop", textDeltas: 8 },
  ],
  "pydantic-ai/test_temporal/test_complex_agent_run.yaml": [
    {
      content: "",
      toolCalls: [
        { id: "call_q2UyBRP7eXNTzAoR8lEhjc9Z", name: "get_country", args: {} },
        { id: "call_b51ijcpFkDiTQG1bQzsrmtW5", name: "get_product_name", args: {} },
      ],
      usage: [364, 40, 404, { reasoningTokens: 0, cachedPromptTokens: 0 }],
      finishReason: "tool_calls",
    },
    {
      content: "",
      toolCalls: [{ id: "call_LwxJUB9KppVyogRRLQsamRJv", name: "get_weather", args: { city: "Mexico City" } }],
      usage: [423, 15, 438, { reasoningTokens: 0, cachedPromptTokens: 0 }],
      finishReason: "tool_calls",
    },
    {
      content: "",
      toolCalls: [
        {
          id: "call_CCGIWaMeYWmxOQ91orkmTvzn",
          name: "final_result",
          args: {
            answers: [
              { label: "Capital", answer: "The capital of Mexico is Mexico City." },
              { label: "Weather", answer: "The weather in Mexico City is currently sunny." },
              { label: "Product Name", answer: "The product name is Pydantic AI." },
            ],
          },
        },
      ],
      usage: [448, 62, 510, { reasoningTokens: 0, cachedPromptTokens: 0 }],
      finishReason: "tool_calls",
    },
  ],
  "pydantic-ai/test_openai/test_compatible_api_with_tool_calls_without_id.yaml": [
    // Gemini sent `id: ""`: we mint one, as pydantic-ai did (and the server accepted it).
    { content: "", toolCalls: [{ id: SYNTHETIC_ID, name: "get_current_time", args: {} }], usage: [35, 12, 109], finishReason: "tool_calls" },
    { content: "The current time is Noon.", usage: [66, 6, 100], finishReason: "stop" },
  ],
  "pydantic-ai/test_groq/test_tool_use_failed_error.yaml": [
    {
      error: {
        kind: "http",
        status: 400,
        code: "tool_use_failed",
        messageContains: ["HTTP 400", "Tool call validation failed", "did not match schema"],
        requests: 1,
      },
    },
    {
      content: "",
      toolCalls: [{ id: "fc_311ba17b-89f9-48d3-8fd9-7e74a1264855", name: "get_something_by_name", args: { name: "test" } }],
      usage: [301, 52, 353, { reasoningTokens: 22 }],
      finishReason: "tool_calls",
      reasoningStartsWith: "We need to call with correct param: name field.",
    },
    {
      content: { startsWith: "The first call failed due to missing and extra parameters, as expected.", length: 140 },
      usage: [336, 96, 432, { reasoningTokens: 59, cachedPromptTokens: 256 }],
      finishReason: "stop",
      reasoningStartsWith: "We need to respond to user request.",
    },
  ],
  "pydantic-ai/test_groq/test_tool_use_failed_error_streaming.yaml": [
    {
      // HTTP 200, then `event: error` with a JSON error: no retry (status_code 400), typed error.
      error: {
        kind: "stream",
        status: 400,
        code: "tool_use_failed",
        messageContains: ["error event in the stream", "Tool call validation failed", "'invalid_param' not allowed"],
        requests: 1,
      },
    },
    {
      content: "",
      toolCalls: [{ id: "fc_bfb39741-3748-4def-9886-a93fc9c64a90", name: "get_something_by_name", args: { name: "example" } }],
      usage: [304, 49, 353, { reasoningTokens: 23 }],
      finishReason: "tool_calls",
      reasoningStartsWith: "We need to call the function with correct paramete",
    },
    {
      content: "The tool returned the expected result for the valid call.",
      usage: [339, 58, 397, { reasoningTokens: 38 }],
      finishReason: "stop",
      reasoningStartsWith: "The user wants to test error handling by calling t",
    },
  ],
  "pydantic-ai/test_openrouter/test_openrouter_stream_error.yaml": [
    // 17 keep-alive comments, reasoning, finish_reason "length", then an `error` chunk: typed error.
    { error: { kind: "stream", status: 400, code: "400", messageContains: ["Token limit reached"], requests: 1 } },
  ],
  "pydantic-ai/test_openrouter/test_openrouter_errors_raised.yaml": [
    // Three 429s: the first attempt and both retries use them up; the error keeps the upstream reason.
    {
      error: {
        kind: "http",
        status: 429,
        code: "429",
        messageContains: ["HTTP 429", "Provider returned error", "temporarily rate-limited upstream", "after 3 attempts"],
        requests: 3,
      },
    },
  ],
  "pydantic-ai/test_crusoe/test_crusoe_tool_calling.yaml": [
    {
      content: "",
      toolCalls: [{ id: "chatcmpl-tool-bbb91941bf76335c", name: "get_weather", args: { city: "Paris" } }],
      usage: [167, 37, 204, { reasoningTokens: 25, cachedPromptTokens: 0 }],
      finishReason: "tool_calls",
      reasoningStartsWith: "The user wants to know the weather in Paris.",
    },
    {
      content: { startsWith: "The weather in Paris is currently **sunny** with a temperature of **25°C**.", length: 114 },
      usage: [214, 54, 268, { reasoningTokens: 20, cachedPromptTokens: 64 }],
      finishReason: "stop",
      reasoningStartsWith: "The weather in Paris is sunny and 25°C.",
    },
  ],
  "pydantic-ai/test_crusoe/test_crusoe_model_streaming.yaml": [
    { content: "1, 2, 3, 4, 5", usage: [46, 14, 60, { cachedPromptTokens: 0 }], finishReason: "stop", textDeltas: 13 },
  ],
  "pydantic-ai/test_ollama/test_ollama_cloud_tool_output.yaml": [
    { content: "Paris.", usage: [134, 122, 256], finishReason: "stop", reasoningStartsWith: "We need to answer question" },
    {
      content: "",
      toolCalls: [{ id: "call_o2vnpxrw", name: "final_result", args: { city: "Paris", country: "France" } }],
      usage: [206, 194, 400],
      finishReason: "tool_calls",
      reasoningStartsWith: "The conversation: user asked",
    },
  ],
  // Images, a PDF and audio (real gpt-4o and gpt-4o-audio-preview traffic): our parts must go out as these requests did.
  "pydantic-ai/test_openai/test_image_as_binary_content_tool_response.yaml": [
    { content: "", toolCalls: [{ id: "call_1FnV4RIOyM7T9BxPHbSuUexJ", name: "get_image", args: {} }], usage: [46, 10, 56, { reasoningTokens: 0, cachedPromptTokens: 0 }], finishReason: "tool_calls" },
    { content: "The fruit in the image is a kiwi.", usage: [847, 10, 857, { reasoningTokens: 0, cachedPromptTokens: 0 }], finishReason: "stop" },
  ],
  "pydantic-ai/test_openai/test_image_url_tool_response.yaml": [
    { content: "", toolCalls: [{ id: "call_4hrT4QP9jfojtK69vGiFCFjG", name: "get_image", args: {} }], usage: [46, 11, 57, { reasoningTokens: 0, cachedPromptTokens: 0 }], finishReason: "tool_calls" },
    { content: "The image shows a potato.", usage: [503, 8, 511, { reasoningTokens: 0, cachedPromptTokens: 0 }], finishReason: "stop" },
  ],
  "pydantic-ai/test_openai/test_document_as_binary_content_input.yaml": [{ content: 'The main content of the document is "Dummy PDF file."', usage: [235, 13, 248, { reasoningTokens: 0, cachedPromptTokens: 0 }], finishReason: "stop" }],
  "pydantic-ai/test_openai/test_audio_as_binary_content_input.yaml": [{ content: "The name mentioned in the audio is Marcelo.", usage: [64, 9, 73, { reasoningTokens: 0, cachedPromptTokens: 0 }], finishReason: "stop" }],
  "pydantic-ai/test_ollama/test_ollama_local_native_output_uses_json_schema.yaml": [
    {
      content: '{ "city": "Paris", "country": "France" }',
      usage: [136, 15, 151],
      finishReason: "stop",
      reasoningStartsWith: "Okay, the user is asking for the capital of France.",
    },
  ],
};


it("covers every Chat Completions recording in the fixtures folder (responses-recordings.test.ts covers the Responses ones)", () => {
  const covered = [...Object.keys(SINGLE), ...Object.keys(CASSETTES)].sort();
  expect(recordingFiles().filter((file) => !isResponsesRecording(file)).sort()).toEqual(covered);
});

async function checkTurn(turn: ModelTurn, expected: TurnExpectation, deltas: string[]): Promise<void> {
  if (typeof expected.content === "string") expect(turn.content).toBe(expected.content);
  else {
    expect(turn.content.startsWith(expected.content.startsWith)).toBe(true);
    expect(turn.content).toHaveLength(expected.content.length);
  }
  const calls = turn.toolCalls.map((call) => ({ id: call.id, name: call.name, args: JSON.parse(call.arguments) as unknown }));
  expect(calls).toEqual(
    (expected.toolCalls ?? []).map((call) => ({ ...call, id: typeof call.id === "string" ? call.id : expect.stringMatching(call.id) })),
  );
  if (expected.usage === "missing") {
    expect(turn.usage).toEqual({ promptTokens: 0, completionTokens: 0, totalTokens: 0 });
    expect(turn.usageMissing).toBe(true);
  } else {
    const [promptTokens, completionTokens, totalTokens, details] = expected.usage;
    expect(turn.usage).toEqual({ promptTokens, completionTokens, totalTokens, ...details });
    expect(turn.usageMissing).toBeUndefined();
  }
  expect(turn.finishReason).toBe(expected.finishReason);
  expect(turn.refusal).toBe(expected.refusal);
  if (expected.reasoningStartsWith === undefined) expect(turn.reasoning).toBeUndefined();
  else expect(turn.reasoning?.startsWith(expected.reasoningStartsWith)).toBe(true);
  // Streamed text reaches the caller piece by piece and adds up to the content.
  expect(deltas.join("")).toBe(turn.content);
  if (expected.textDeltas !== undefined) expect(deltas).toHaveLength(expected.textDeltas);
}


/** A request that reproduces what the recording client sent, so both sides can be compared. */
function requestFromRecording(recorded: Record<string, unknown> | undefined): ModelRequest {
  if (!recorded) return { messages: [human("hello")], tools: [] };
  const { model, messages, tools, tool_choice, stream, stream_options, ...rest } = recorded;
  const request: ModelRequest = {
    model: String(model),
    messages: fromWireMessages(messages),
    tools: (tools as FunctionSchema[] | undefined) ?? [],
    extraParams: rest,
  };
  void stream;
  void stream_options;
  if (tool_choice !== undefined) request.toolChoice = tool_choice as NonNullable<ModelRequest["toolChoice"]>;
  return request;
}

/**
 * The recorded request body as our client must send it. Differences that carry no meaning are
 * normalized: an assistant turn's `content` absent vs null, and fields we do not send back
 * (`reasoning` on a past assistant turn, the SDK-specific `stream_options` of a Groq client).
 */
function normalizeBody(body: Record<string, unknown>): Record<string, unknown> {
  const { stream_options, ...rest } = body;
  void stream_options;
  const messages = (rest["messages"] as Record<string, unknown>[]).map((message) => {
    const { reasoning, ...kept } = message;
    void reasoning;
    if (kept["role"] === "assistant" && kept["content"] === undefined) kept["content"] = null;
    return kept;
  });
  return { ...rest, messages };
}

/** Replays the interactions in order; an expectation of a failure with retries consumes several. */
async function replay(interactions: RecordedInteraction[], expectations: Expectation[]): Promise<void> {
  let next = 0;
  for (const expected of expectations) {
    const consumed = "error" in expected ? (expected.error.requests ?? 1) : 1;
    const slice = interactions.slice(next, next + consumed);
    next += consumed;
    const interaction = slice[0] as RecordedInteraction;
    // A fresh server per logical call, so one call can never eat the next one's reply.
    // Replayed with `checkMedia`: a request whose images, documents or audio differ from the recorded ones gets a 400.
    const server = await serve(replayInteractions(slice, { checkMedia: true }));
    // The recordings are OpenAI's own traffic: its models take documents, which a loopback server by default is not trusted to.
    const client = clientFor(server, { stream: interaction.stream, accepts: { file: true } });
    const log = eventLog();
    const request = requestFromRecording(interaction.request);
    if ("error" in expected) {
      checkError(await caught(() => client.complete(request, { onEvent: log.onEvent })), expected.error);
      expect(server.requests).toHaveLength(consumed);
      expect(log.ofType("model.call.failed").map((event) => event.next)).toEqual([...Array(consumed - 1).fill("retry"), "none"]);
    } else {
      const turn = await client.complete(request, { onEvent: log.onEvent });
      await checkTurn(turn, expected, log.ofType("text.delta").map((event) => event.delta));
      expect(turn.model).toBe(request.model ?? "test-model");
      expect(log.ofType("model.call.completed")).toHaveLength(1);
    }
    // Our client sent what the recording client sent (same messages, tools, tool_choice, extras).
    server.requests.forEach((received, i) => {
      const recorded = slice[i]?.request;
      if (!recorded) return;
      const sent = received.body as Record<string, unknown>;
      expect(normalizeBody(sent)).toEqual(normalizeBody(recorded));
      if (interaction.stream) expect(sent["stream_options"]).toEqual({ include_usage: true });
    });
  }
  expect(next).toBe(interactions.length);
}

describe("single recorded responses, replayed over HTTP through the openai SDK", () => {
  for (const [file, expected] of Object.entries(SINGLE)) {
    it(file, async () => {
      await replay(loadRecording(fixture(file)).interactions, [expected]);
    });
  }
});

describe("recorded cassettes, every interaction in order", () => {
  for (const [file, expected] of Object.entries(CASSETTES)) {
    it(file, async () => {
      await replay(loadRecording(fixture(file)).interactions, expected);
    });
  }
});
