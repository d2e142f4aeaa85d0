import { afterEach, describe, expect, it } from "vitest";
import { human } from "../../actors/messages.js";
import type { ModelTurn, Usage } from "../../actors/model-client.js";
import { loadRecording, replayInteractions, type LoadOptions, type RecordedInteraction } from "../../testing/recordings.js";
import { caught, checkError, clientFor, closeServers, eventLog, fixture, isResponsesRecording, recordingFiles, serve, type ExpectedModelError } from "./harness.js";

/*
 * Every Responses API recording (test/fixtures/openai, SOURCES.md), each reply replayed over real
 * HTTP to `ModelClient.resolve({ api: "responses" })` through the `openai` SDK's `responses`
 * resource, streamed or whole as recorded. What each reply must come to was read off the files.
 * The runs these replies belong to are driven through the machine in responses-agent-run.test.ts.
 */

afterEach(closeServers);

interface TurnExpectation {
  content: string | { startsWith: string; length: number };
  toolCalls?: { id: string; name: string; args: unknown }[];
  /** prompt, completion, total, reasoning, cached. */
  usage: [number, number, number, number, number];
  finishReason: string;
  reasoningStartsWith?: string;
  /** The reasoning items kept on the turn: id, summary parts, whether the encrypted content came. */
  reasoningItems?: { id: string; summaryParts: number; encrypted: boolean }[];
  serverModel: string;
  textDeltas?: number;
  reasoningDeltas?: number;
}

interface ErrorExpectation {
  error: ExpectedModelError;
  load?: LoadOptions;
}

type Expectation = TurnExpectation | ErrorExpectation;

const EXPECTED: Record<string, Expectation[]> = {
  "pydantic-ai/test_openai_responses/test_openai_responses_stream.yaml": [
    {
      content: "",
      toolCalls: [{ id: "call_kL0PCQV7M2WMoVX8V8OtYSAL", name: "get_capital", args: { country: "France" } }],
      usage: [255, 16, 271, 0, 0],
      finishReason: "tool_calls",
      serverModel: "gpt-4o-2024-08-06",
      textDeltas: 0,
    },
    { content: "The capital of France is Paris.", usage: [278, 9, 287, 0, 0], finishReason: "stop", serverModel: "gpt-4o-2024-08-06", textDeltas: 7 },
  ],
  "pydantic-ai/test_openai_responses/test_openai_responses_thinking_with_tool_calls.yaml": [
    {
      content: "",
      toolCalls: [{ id: "call_gL7JE6GDeGGsFubqO2XGytyO", name: "update_plan", args: { plan: expect.stringMatching(/^Plan:\n1\) Determine required first-letter acrostics/) } }],
      usage: [124, 1926, 2050, 1792, 0],
      finishReason: "tool_calls",
      reasoningStartsWith: "**Creating a structured poem**\n\nI need to craft a 12-line poem",
      reasoningItems: [{ id: "rs_68c42d29124881968e24c1ca8c1fc7860e8bc41441c948f6", summaryParts: 5, encrypted: true }],
      serverModel: "gpt-5-2025-08-07",
    },
    {
      content: { startsWith: "Softly old fountains illumine alleys\nDunes over harbor aglow", length: 499 },
      usage: [2087, 124, 2211, 0, 2048],
      finishReason: "stop",
      serverModel: "gpt-5-2025-08-07",
    },
  ],
  "pydantic-ai/test_openai_responses/test_openai_responses_model_retry.yaml": [
    {
      content: "",
      toolCalls: [
        { id: "call_LWVp74L5HaH2KNvgVz9PJsrj", name: "get_location", args: { loc_name: "Londos" } },
        { id: "call_YnRAWeTyxI91m5uNa5bxXwVO", name: "get_location", args: { loc_name: "London" } },
      ],
      usage: [0, 0, 0, 0, 0],
      finishReason: "tool_calls",
      serverModel: "gpt-4o-2024-08-06",
    },
    {
      content: { startsWith: 'It seems "Londos" might be incorrect or unknown.', length: 175 },
      usage: [335, 44, 379, 0, 0],
      finishReason: "stop",
      serverModel: "gpt-4o-2024-08-06",
    },
  ],
  "pydantic-ai/test_openai_responses/test_openai_responses_streaming_usage.yaml": [
    {
      content: "",
      toolCalls: [{ id: "call_CWXgs68YprAjp6t0371hiPOI", name: "final_result", args: { result: 6666 } }],
      usage: [53, 469, 522, 448, 0],
      finishReason: "tool_calls",
      // No summary was asked for: the item has none, but its encrypted content came.
      reasoningItems: [{ id: "rs_0050471a34b36ae60068c97bac4dcc819595fd0f80d6b3c405", summaryParts: 0, encrypted: true }],
      serverModel: "gpt-5-2025-08-07",
      reasoningDeltas: 0,
    },
  ],
  "pydantic-ai/test_openai_responses/test_openai_responses_model_http_error.yaml": [
    { error: { kind: "http", status: 400, code: "decimal_below_min_value", messageContains: ["HTTP 400", "Invalid 'temperature': decimal below minimum value"] } },
  ],
  "vercel-ai/openai-responses/openai-reasoning-encrypted-content.1.chunks.txt": [
    {
      content: "",
      toolCalls: [{ id: "call_AB6AaRZ1FYZB2RwS6A5vbdqn", name: "calculator", args: { a: 12, b: 7, op: "add" } }],
      usage: [134, 28, 162, 0, 0],
      finishReason: "tool_calls",
      reasoningStartsWith: "**Calculating step-by-step using calculator**\n\nI'll compute 12 plus 7",
      reasoningItems: [{ id: "rs_01830d662ab3856501693c321405c88190be3ab04d5782d5f9", summaryParts: 1, encrypted: true }],
      serverModel: "gpt-5.1-codex-max",
      textDeltas: 0,
      reasoningDeltas: 32,
    },
    {
      content: "",
      toolCalls: [{ id: "call_Q6pW65MUgW9vF59BmItYGos3", name: "calculator", args: { a: 19, b: 3, op: "multiply" } }],
      usage: [221, 26, 247, 0, 0],
      finishReason: "tool_calls",
      serverModel: "gpt-5.1-codex-max",
    },
    {
      content: "",
      toolCalls: [{ id: "call_Zl5vIMnD7dVAjgU6FkhmiCZh", name: "calculator", args: { a: 57, b: 10, op: "multiply" } }],
      usage: [260, 26, 286, 0, 0],
      finishReason: "tool_calls",
      serverModel: "gpt-5.1-codex-max",
    },
    { content: "The final result is **570**.", usage: [299, 12, 311, 0, 0], finishReason: "stop", serverModel: "gpt-5.1-codex-max", textDeltas: 8, reasoningDeltas: 0 },
  ],
  "vercel-ai/openai-responses/openai-error.1.chunks.txt": [
    // An `error` event with a nested error object inside a 200 stream: the SDK raises it, without a status.
    { error: { kind: "stream", code: "insufficient_quota", messageContains: ["error event in the stream", "You exceeded your current quota"] } },
  ],
  "vercel-ai/openai-responses/openai-error.1.json": [
    // 429 is what OpenAI answers an exhausted quota with; retrying cannot help, so it is not retried.
    { error: { kind: "http", status: 429, code: "insufficient_quota", messageContains: ["HTTP 429", "You exceeded your current quota"] }, load: { status: 429, api: "responses" } },
  ],
  "vercel-ai/openai-responses/reasoning-model-temperature-error.json": [
    { error: { kind: "http", status: 400, messageContains: ["HTTP 400", "Unsupported parameter: 'temperature' is not supported with this model."] }, load: { api: "responses" } },
  ],
};

function checkTurn(turn: ModelTurn, expected: TurnExpectation, log: ReturnType<typeof eventLog>): void {
  if (typeof expected.content === "string") expect(turn.content).toBe(expected.content);
  else {
    expect(turn.content.startsWith(expected.content.startsWith)).toBe(true);
    expect(turn.content).toHaveLength(expected.content.length);
  }
  expect(turn.toolCalls.map((call) => ({ id: call.id, name: call.name, args: JSON.parse(call.arguments) as unknown }))).toEqual(expected.toolCalls ?? []);
  const [promptTokens, completionTokens, totalTokens, reasoningTokens, cachedPromptTokens] = expected.usage;
  expect(turn.usage).toEqual({ promptTokens, completionTokens, totalTokens, reasoningTokens, cachedPromptTokens } satisfies Usage);
  expect(turn.usageMissing).toBeUndefined();
  expect(turn.finishReason).toBe(expected.finishReason);
  expect(turn.serverModel).toBe(expected.serverModel);
  if (expected.reasoningStartsWith === undefined) expect(turn.reasoning).toBeUndefined();
  else expect(turn.reasoning?.startsWith(expected.reasoningStartsWith)).toBe(true);
  if (expected.reasoningItems === undefined) expect(turn.reasoningItems).toBeUndefined();
  else {
    expect(turn.reasoningItems).toMatchObject({ api: "responses", endpoint: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/v1$/), model: "test-model" });
    expect(turn.reasoningItems!.items.map((item) => ({ id: item.id, summaryParts: item.summary.length, encrypted: (item.encryptedContent ?? "").startsWith("gAAAAA") }))).toEqual(
      expected.reasoningItems,
    );
  }
  // What streamed adds up to the turn: the text to the content, the reasoning deltas to the reasoning.
  const text = log.ofType("text.delta").map((event) => event.delta);
  const reasoning = log.ofType("reasoning.delta").map((event) => event.delta);
  expect(text.join("")).toBe(turn.content);
  expect(reasoning.join("")).toBe(turn.reasoning ?? "");
  if (expected.textDeltas !== undefined) expect(text).toHaveLength(expected.textDeltas);
  if (expected.reasoningDeltas !== undefined) expect(reasoning).toHaveLength(expected.reasoningDeltas);
  expect(log.ofType("model.call.completed")).toMatchObject([{ usage: turn.usage, finishReason: expected.finishReason }]);
}


/** One logical call per interaction, each to a fresh server, as `api: "responses"` with the recorded streaming mode. */
async function replay(interactions: readonly RecordedInteraction[], expectations: readonly Expectation[]): Promise<void> {
  expect(interactions).toHaveLength(expectations.length);
  for (const [i, expected] of expectations.entries()) {
    const interaction = interactions[i] as RecordedInteraction;
    expect(interaction.api).toBe("responses");
    const server = await serve(replayInteractions([interaction]));
    const client = clientFor(server, { api: "responses", stream: interaction.stream });
    const log = eventLog();
    const request = { messages: [human("hello")], tools: [] };
    if ("error" in expected) {
      checkError(await caught(() => client.complete(request, { onEvent: log.onEvent })), expected.error);
      // Not one of these is worth a retry: one request each.
      expect(server.requests).toHaveLength(1);
      expect(log.ofType("model.call.failed")).toMatchObject([{ willRetry: false, next: "none" }]);
    } else {
      checkTurn(await client.complete(request, { onEvent: log.onEvent }), expected, log);
    }
    const sent = server.requests[0]!;
    expect(sent.path).toBe("/v1/responses");
    expect(sent.body).toMatchObject({ model: "test-model", input: [{ role: "user", content: "hello" }], store: false, stream: interaction.stream });
  }
}

describe("Responses API recordings, replayed over HTTP through the openai SDK's responses resource", () => {
  for (const [file, expected] of Object.entries(EXPECTED)) {
    it(file, async () => {
      const load = expected.find((entry): entry is ErrorExpectation => "error" in entry)?.load;
      await replay(loadRecording(fixture(file), load).interactions, expected);
    });
  }
});


it("covers every Responses API recording in the fixtures folder", () => {
  expect(recordingFiles().filter(isResponsesRecording).sort()).toEqual(Object.keys(EXPECTED).sort());
});
