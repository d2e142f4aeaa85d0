import { convertArrayToReadableStream, MockLanguageModelV3 } from "ai/test";
import type { LanguageModelV2, LanguageModelV2CallOptions, LanguageModelV2StreamPart, LanguageModelV3CallOptions, LanguageModelV3StreamPart } from "@ai-sdk/provider";
import { describe, expect, it } from "vitest";
import { fromAiSdk } from "../../ai-sdk.js";
import { createReactMachine, human, ModelClientOptionsError, ModelError, runAgent, type ModelCallEvent } from "../../index.js";
import { functionSchemas } from "../../tools/toolset.js";
import { toolInfo } from "../../tools/tool.js";
import { aiMajor } from "./ai-version.js";
import { expectGreeting, finish, greeting, text, toolCall, weather } from "./stream-script.js";

/*
 * Run on AI SDK 6 and again on AI SDK 7 (vitest.config.ts's two projects).
 * fromAiSdk against the AI SDK's own mock model (ai/test): what the SDK hands the provider (the
 * prompt, the tools, the settings, the provider options), and how the provider's stream parts come
 * back as a jianmu turn.
 */

/** A mock model that streams each script in turn and keeps every call's options. */
function scripted(...turns: LanguageModelV3StreamPart[][]) {
  const calls: LanguageModelV3CallOptions[] = [];
  const model = new MockLanguageModelV3({
    provider: "mock.messages",
    modelId: "mock-1",
    // PDFs by URL go to the provider as URLs; anything else the SDK would download first.
    supportedUrls: { "application/pdf": [/^https:\/\//] },
    doStream: async (options) => {
      calls.push(options);
      const turn = turns[calls.length - 1];
      if (!turn) throw new Error(`the script has ${turns.length} turns; call ${calls.length} has none`);
      return { stream: convertArrayToReadableStream([{ type: "stream-start", warnings: [] }, ...turn]) };
    },
  });
  return { model, calls };
}


describe("fromAiSdk over the AI SDK's mock model", () => {
  it("streams text and reasoning as events and reports usage with its reasoning and cache-read details", async () => {
    const { model } = scripted(greeting());
    const events: ModelCallEvent[] = [];
    const turn = await fromAiSdk(model).complete({ messages: [human("hi")], tools: [] }, { onEvent: (event) => events.push(event) });
    expectGreeting(turn, events, "mock-1");
  });

  it("runs a ReAct loop: parallel tool calls go back as tool results, the second call sees them", async () => {
    const { model, calls } = scripted(
      [...toolCall("call_1", "get_weather", '{"city":', '"Paris"}'), ...toolCall("call_2", "get_weather", '{"city":"Oslo"}'), finish("tool-calls")],
      [...text("t", "Paris 18°C, Oslo 18°C."), finish("stop")],
    );
    const machine = createReactMachine({ modelClient: fromAiSdk(model), tools: [weather] });
    const output = await runAgent(machine, { messages: [human("Weather in Paris and Oslo?")] });
    expect(output).toMatchObject({ status: "succeeded", finalAnswer: "Paris 18°C, Oslo 18°C." });
    expect(output.usage).toMatchObject({ promptTokens: 20, completionTokens: 10 });
    // The first call offered the tool as a function with its JSON schema.
    expect(calls[0]!.tools).toEqual([expect.objectContaining({ type: "function", name: "get_weather", description: "Current weather of a city", inputSchema: expect.objectContaining({ properties: { city: { type: "string" } } }) })]);
    // The second carried the assistant's calls and both results, in the provider-neutral prompt.
    const prompt = calls[1]!.prompt;
    // The agent's system prompt first; the SDK joins the two tool messages into one.
    expect(prompt.map((message) => message.role)).toEqual(["system", "user", "assistant", "tool"]);
    expect(prompt[2]!.content).toEqual([
      expect.objectContaining({ type: "tool-call", toolCallId: "call_1", toolName: "get_weather", input: { city: "Paris" } }),
      expect.objectContaining({ type: "tool-call", toolCallId: "call_2", toolName: "get_weather", input: { city: "Oslo" } }),
    ]);
    expect(prompt[3]!.content).toEqual([
      expect.objectContaining({ type: "tool-result", toolCallId: "call_1", toolName: "get_weather", output: { type: "text", value: "Paris: 18°C, clear" } }),
      expect.objectContaining({ type: "tool-result", toolCallId: "call_2", toolName: "get_weather", output: { type: "text", value: "Oslo: 18°C, clear" } }),
    ]);
  });

  it("hands images and files to the provider as file parts, and a tool's image as content", async () => {
    const { model, calls } = scripted([...text("t", "A red pixel."), finish("stop")]);
    const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
    await fromAiSdk(model).complete({
      messages: [
        human([{ type: "text", text: "What is this?" }, { type: "image", data: png, mediaType: "image/png" }, { type: "file", url: "https://example.com/report.pdf", mediaType: "application/pdf", filename: "report.pdf" }]),
        { role: "assistant", content: null, toolCalls: [{ id: "c1", name: "screenshot", arguments: "{}" }] },
        { role: "tool", toolCallId: "c1", content: [{ type: "image", data: png, mediaType: "image/png" }] },
      ],
      tools: [],
    });
    const [user, , tool] = calls[0]!.prompt;
    expect(user!.content).toEqual([
      { type: "text", text: "What is this?" },
      expect.objectContaining({ type: "file", mediaType: "image/png", data: expect.anything() }),
      expect.objectContaining({ type: "file", mediaType: "application/pdf", filename: "report.pdf", data: new URL("https://example.com/report.pdf") }),
    ]);
    // AI SDK 7 hands a v3 model a tool's image as file-data (its own conversion of the image-data jianmu writes for v3).
    const imageType = aiMajor >= 7 ? "file-data" : "image-data";
    expect(tool!.content).toEqual([expect.objectContaining({ type: "tool-result", toolName: "screenshot", output: { type: "content", value: [expect.objectContaining({ type: imageType, data: png, mediaType: "image/png" })] } })]);
  });

  it("passes sampling settings, tool choice and provider options (the client's and the request's, per provider)", async () => {
    const { model, calls } = scripted([...text("t", "ok"), finish("stop")]);
    const client = fromAiSdk(model, { providerOptions: { mock: { effort: "low", cache: true } } });
    await client.complete({
      messages: [{ role: "system", content: "Be brief." }, human("hi")],
      tools: functionSchemas([toolInfo(weather)]),
      toolChoice: { type: "function", function: { name: "get_weather" } },
      temperature: 0.2,
      maxTokens: 64,
      extraParams: { seed: 7, providerOptions: { mock: { effort: "high" } } },
    });
    expect(calls[0]).toMatchObject({
      temperature: 0.2,
      maxOutputTokens: 64,
      seed: 7,
      toolChoice: { type: "tool", toolName: "get_weather" },
      providerOptions: { mock: { effort: "high", cache: true } },
    });
    expect(calls[0]!.prompt[0]).toEqual({ role: "system", content: "Be brief." });
  });

  it("a parameter an AI SDK call cannot carry, and a model other than the client's, fail before any call with the field named", async () => {
    const { model, calls } = scripted();
    const client = fromAiSdk(model);
    const unknown = await client.complete({ messages: [human("hi")], tools: [], extraParams: { logit_bias: {} } }).catch((error: unknown) => error);
    expect(unknown).toBeInstanceOf(ModelError);
    expect(unknown).toMatchObject({ kind: "config", message: expect.stringContaining("extraParams.logit_bias: an AI SDK model takes no such parameter") });
    const other = await client.complete({ model: "gpt-5", messages: [human("hi")], tools: [] }).catch((error: unknown) => error);
    expect(other).toMatchObject({ kind: "config", message: expect.stringContaining("config.model asks for gpt-5, but this client is bound to mock-1") });
    expect(calls).toHaveLength(0);
    expect(() => fromAiSdk("anthropic/claude" as never)).toThrow(ModelClientOptionsError);
    expect(() => fromAiSdk("anthropic/claude" as never)).toThrow(/model: must be an AI SDK language model object/);
    expect(() => fromAiSdk(model, { timeoutMs: -1 })).toThrow(/invalid model client options: timeoutMs: /);
  });

  it("a provider error is retried under jianmu's policy and ends as a typed ModelError with each attempt", async () => {
    const { APICallError } = await import("ai");
    let attempts = 0;
    const model = new MockLanguageModelV3({
      doStream: async () => {
        attempts += 1;
        throw new APICallError({ message: "Overloaded", url: "http://127.0.0.1/v1/messages", requestBodyValues: {}, statusCode: 529, responseHeaders: { "retry-after": "0" }, data: { error: { type: "overloaded_error" } } });
      },
    });
    const events: ModelCallEvent[] = [];
    const client = fromAiSdk(model, { resilience: { maxRetries: 2, initialDelayMs: 1, maxDelayMs: 5 } });
    const error = await client.complete({ messages: [human("hi")], tools: [] }, { onEvent: (event) => events.push(event) }).catch((e: unknown) => e);
    expect(attempts).toBe(3);
    expect(error).toBeInstanceOf(ModelError);
    expect(error).toMatchObject({ kind: "http", status: 529, code: "overloaded_error", retryable: true });
    expect((error as ModelError).attempts).toHaveLength(3);
    expect(events.filter((event) => event.type === "model.call.failed").map((event) => event.type === "model.call.failed" && event.next)).toEqual(["retry", "retry", "none"]);
  });

  it("a stream that breaks after text went out is not retried; a hung one ends at the attempt's time limit", async () => {
    let attempts = 0;
    const broken = new MockLanguageModelV3({
      doStream: async () => {
        attempts += 1;
        return { stream: convertArrayToReadableStream<LanguageModelV3StreamPart>([{ type: "stream-start", warnings: [] }, ...text("t", "Half an ans"), { type: "error", error: new Error("socket hang up") }]) };
      },
    });
    const error = await fromAiSdk(broken, { resilience: { maxRetries: 3, initialDelayMs: 1 } }).complete({ messages: [human("hi")], tools: [] }).catch((e: unknown) => e);
    expect(attempts).toBe(1);
    expect(error).toMatchObject({ name: "ModelError", kind: "connection", message: expect.stringContaining("the response broke off after output had reached the caller, so it was not retried: connection failed: socket hang up") });

    const hung = new MockLanguageModelV3({ doStream: async () => ({ stream: new ReadableStream<LanguageModelV3StreamPart>({ start: (controller) => controller.enqueue({ type: "stream-start", warnings: [] }) }) }) });
    const late = await fromAiSdk(hung, { timeoutMs: 50, resilience: { maxRetries: 0 } }).complete({ messages: [human("hi")], tools: [] }).catch((e: unknown) => e);
    expect(late).toMatchObject({ name: "ModelError", kind: "timeout", message: expect.stringContaining("no complete answer within 50 ms") });
  });

  it("a native structured output's response_format becomes the SDK's JSON response format with its schema", async () => {
    const { model, calls } = scripted([...text("t", '{"city":"Lima"}'), finish("stop")]);
    const schema = { type: "object", properties: { city: { type: "string" } }, required: ["city"], additionalProperties: false };
    const turn = await fromAiSdk(model).complete({ messages: [human("Where?")], tools: [], extraParams: { response_format: { type: "json_schema", json_schema: { name: "answer", schema, strict: true } } } });
    expect(turn.content).toBe('{"city":"Lima"}');
    expect(calls[0]!.responseFormat).toMatchObject({ type: "json", name: "answer", schema: expect.objectContaining({ properties: { city: { type: "string" } } }) });
  });

  it("a cancelled call stops the provider's stream through its own AbortController and fails as aborted", async () => {
    let signal: AbortSignal | undefined;
    const model = new MockLanguageModelV3({
      doStream: async (options) => {
        signal = options.abortSignal;
        const stream = new ReadableStream<LanguageModelV3StreamPart>({
          start(controller) {
            controller.enqueue({ type: "stream-start", warnings: [] });
            controller.enqueue({ type: "text-start", id: "t" });
            controller.enqueue({ type: "text-delta", id: "t", delta: "Thinking about it" });
            options.abortSignal?.addEventListener("abort", () => controller.error(options.abortSignal?.reason));
          },
        });
        return { stream };
      },
    });
    const caller = new AbortController();
    const call = fromAiSdk(model).complete({ messages: [human("hi")], tools: [] }, { signal: caller.signal, onEvent: (event) => event.type === "text.delta" && caller.abort() });
    await expect(call).rejects.toMatchObject({ name: "ModelError", kind: "aborted" });
    // The provider saw an attempt's own signal, not the caller's, and it was aborted.
    expect(signal).not.toBe(caller.signal);
    expect(signal?.aborted).toBe(true);
  });
});

describe("fromAiSdk over a specification v2 model", () => {
  // ai/test in v6 mocks v3 only; this is the v2 interface as @ai-sdk/provider declares it, which
  // providers written for AI SDK 5 still implement.
  it("streams its text and tool calls and reads its flat usage", async () => {
    const calls: LanguageModelV2CallOptions[] = [];
    const parts: LanguageModelV2StreamPart[] = [
      { type: "stream-start", warnings: [] },
      { type: "reasoning-start", id: "r" },
      { type: "reasoning-delta", id: "r", delta: "Look it up." },
      { type: "reasoning-end", id: "r" },
      { type: "text-start", id: "t" },
      { type: "text-delta", id: "t", delta: "Checking." },
      { type: "text-end", id: "t" },
      { type: "tool-input-start", id: "c1", toolName: "get_weather" },
      { type: "tool-input-delta", id: "c1", delta: '{"city":"Lima"}' },
      { type: "tool-input-end", id: "c1" },
      { type: "tool-call", toolCallId: "c1", toolName: "get_weather", input: '{"city":"Lima"}' },
      { type: "finish", finishReason: "tool-calls", usage: { inputTokens: 50, outputTokens: 12, totalTokens: 62, reasoningTokens: 4, cachedInputTokens: 32 } },
    ];
    const model: LanguageModelV2 = {
      specificationVersion: "v2",
      provider: "legacy.chat",
      modelId: "legacy-1",
      supportedUrls: {},
      doGenerate: () => Promise.reject(new Error("fromAiSdk streams")),
      doStream: async (options) => {
        calls.push(options);
        return { stream: convertArrayToReadableStream(parts) };
      },
    };
    const arguments_: string[] = [];
    const turn = await fromAiSdk(model).complete(
      { messages: [human("Weather in Lima?")], tools: functionSchemas([toolInfo(weather)]) },
      { onToolArguments: (call) => arguments_.push(`${call.index}:${call.name}:${call.arguments}`) },
    );
    expect(turn).toMatchObject({ content: "Checking.", reasoning: "Look it up.", finishReason: "tool_calls", model: "legacy-1", toolCalls: [{ id: "c1", name: "get_weather", arguments: '{"city":"Lima"}' }] });
    expect(turn.usage).toEqual({ promptTokens: 50, completionTokens: 12, totalTokens: 62, reasoningTokens: 4, cachedPromptTokens: 32 });
    expect(arguments_).toEqual(['0:get_weather:{"city":"Lima"}']);
    expect(calls[0]!.tools).toEqual([expect.objectContaining({ type: "function", name: "get_weather" })]);
  });
});
