import { APICallError } from "ai";
import { convertArrayToReadableStream, MockLanguageModelV4 } from "ai/test";
import { afterEach, beforeEach, describe, expect, expectTypeOf, it } from "vitest";
import { fromAiSdk, type AiSdkLanguageModel } from "../../ai-sdk.js";
import { createReactMachine, human, ModelError, runAgent, type ModelCallEvent } from "../../index.js";
import { functionSchemas } from "../../tools/toolset.js";
import { toolInfo } from "../../tools/tool.js";
import { aiMajor } from "../ai-sdk/ai-version.js";
import { expectGreeting, expectTwoCitiesPrompt, finish, greeting, text, twoCities, usage, weather, wholeAnswer } from "../ai-sdk/stream-script.js";
import { capturedWarnings } from "./warnings.js";

/*
 * fromAiSdk on AI SDK 7 (this folder runs in vitest.config.ts's "ai-sdk-7" project, where `ai` is
 * ai@7) against its own mock of a specification v4 model, the kind its provider packages return:
 * what the SDK hands the provider, and how the v4 stream parts come back as a jianmu turn.
 */

type CallOptions = Parameters<MockLanguageModelV4["doStream"]>[0];
type StreamPart = Awaited<ReturnType<MockLanguageModelV4["doStream"]>>["stream"] extends ReadableStream<infer Part> ? Part : never;

/** A v4 mock model that streams each script in turn and keeps every call's options. */
function scripted(...turns: StreamPart[][]) {
  const calls: CallOptions[] = [];
  const model = new MockLanguageModelV4({
    provider: "mock.v4",
    modelId: "mock-v4",
    // Media by https URL go to the provider as URLs; anything else the SDK would download first.
    supportedUrls: { "image/*": [/^https:\/\//], "application/pdf": [/^https:\/\//] },
    doStream: async (options) => {
      calls.push(options);
      const turn = turns[calls.length - 1];
      if (!turn) throw new Error(`the script has ${turns.length} turns; call ${calls.length} has none`);
      return { stream: convertArrayToReadableStream<StreamPart>([{ type: "stream-start", warnings: [] }, ...turn]) };
    },
  });
  return { model, calls };
}


const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

let warnings: ReturnType<typeof capturedWarnings>;
beforeEach(() => {
  warnings = capturedWarnings();
});
afterEach(() => warnings.stop());

describe("fromAiSdk over AI SDK 7's specification v4 mock model", () => {
  it("runs on ai 7, and takes the v4 model as it is typed", () => {
    expect(aiMajor).toBe(7);
    const { model } = scripted();
    expect(model.specificationVersion).toBe("v4");
    expectTypeOf(model).toExtend<AiSdkLanguageModel>();
  });

  it("streams text and reasoning as events and reads the v4 usage with its reasoning and cache-read details", async () => {
    const { model } = scripted(greeting());
    const events: ModelCallEvent[] = [];
    const turn = await fromAiSdk(model).complete({ messages: [human("hi")], tools: [] }, { onEvent: (event) => events.push(event) });
    expectGreeting(turn, events, "mock-v4");
    expect(warnings.list).toEqual([]);
  });

  it("runs a ReAct loop: parallel tool calls go back as tool results; a signed reasoning block goes back to the model that wrote it", async () => {
    const { model, calls } = scripted(...twoCities());
    const output = await runAgent(createReactMachine({ modelClient: fromAiSdk(model), tools: [weather] }), { messages: [human("Weather in Paris and Oslo?")] });
    expect(output).toMatchObject({ status: "succeeded", finalAnswer: "Paris 18°C, Oslo 18°C." });
    expect(output.usage).toMatchObject({ promptTokens: 20, completionTokens: 10 });
    expect(calls[0]!.tools).toEqual([expect.objectContaining({ type: "function", name: "get_weather", inputSchema: expect.objectContaining({ properties: { city: { type: "string" } } }) })]);
    expectTwoCitiesPrompt(calls[1]!.prompt);
  });

  it("writes images and files as AI SDK 7's file parts (a tool's too), so it warns of no deprecated form", async () => {
    const { model, calls } = scripted([...text("t", "A red pixel."), finish("stop")]);
    await fromAiSdk(model).complete({
      messages: [
        human([{ type: "text", text: "What is this?" }, { type: "image", data: png, mediaType: "image/png" }, { type: "image", url: "https://example.com/cat" }]),
        { role: "assistant", content: null, toolCalls: [{ id: "c1", name: "screenshot", arguments: "{}" }] },
        {
          role: "tool",
          toolCallId: "c1",
          content: [
            { type: "image", data: png, mediaType: "image/png" },
            { type: "file", url: "https://example.com/report.pdf", mediaType: "application/pdf", filename: "report.pdf" },
          ],
        },
      ],
      tools: [],
    });
    const [user, , tool] = calls[0]!.prompt;
    expect(user!.content).toEqual([
      { type: "text", text: "What is this?" },
      expect.objectContaining({ type: "file", mediaType: "image/png", data: { type: "data", data: expect.anything() } }),
      // An image URL of no known type: "image" alone, AI SDK 7's word for "an image, subtype unknown".
      expect.objectContaining({ type: "file", mediaType: "image", data: { type: "url", url: new URL("https://example.com/cat") } }),
    ]);
    expect(tool!.content).toEqual([
      expect.objectContaining({
        type: "tool-result",
        toolName: "screenshot",
        output: {
          type: "content",
          value: [
            expect.objectContaining({ type: "file", mediaType: "image/png", data: { type: "data", data: png } }),
            expect.objectContaining({ type: "file", mediaType: "application/pdf", filename: "report.pdf", data: expect.objectContaining({ type: "url", url: new URL("https://example.com/report.pdf") }) }),
          ],
        },
      }),
    ]);
    expect(warnings.list.filter((warning) => warning.type === "deprecated")).toEqual([]);
  });

  it("a forced tool the model did not call: AI SDK 7 calls it a violation, jianmu hands the answer to the loop as AI SDK 6 does", async () => {
    const { model, calls } = scripted([...text("t", "It is sunny."), finish("stop", usage(30, 4))]);
    const turn = await fromAiSdk(model).complete({
      messages: [human("Weather in Lima?")],
      tools: functionSchemas([toolInfo(weather)]),
      toolChoice: { type: "function", function: { name: "get_weather" } },
    });
    expect(calls[0]!.toolChoice).toEqual({ type: "tool", toolName: "get_weather" });
    expect(turn).toMatchObject({ content: "It is sunny.", toolCalls: [], finishReason: "stop", usage: { promptTokens: 30, completionTokens: 4 } });
  });

  it("asked whole (stream: false), a forced tool the model did not call: generateText throws the violation, jianmu still hands the answer over, its usage missing", async () => {
    const calls: CallOptions[] = [];
    const model = new MockLanguageModelV4({
      doGenerate: async (options) => {
        calls.push(options);
        return wholeAnswer([...text("t", "It is sunny."), finish("stop", usage(30, 4))]) as Awaited<ReturnType<MockLanguageModelV4["doGenerate"]>>;
      },
    });
    const turn = await fromAiSdk(model, { stream: false }).complete({
      messages: [human("Weather in Lima?")],
      tools: functionSchemas([toolInfo(weather)]),
      toolChoice: { type: "function", function: { name: "get_weather" } },
    });
    expect(calls).toHaveLength(1);
    expect(turn).toMatchObject({ content: "It is sunny.", toolCalls: [], finishReason: "stop", usageMissing: true });
  });

  it("a provider's HTTP error is retried under jianmu's policy and ends as a typed ModelError", async () => {
    let attempts = 0;
    const model = new MockLanguageModelV4({
      doStream: async () => {
        attempts += 1;
        throw new APICallError({ message: "Rate limited", url: "http://127.0.0.1/v1/responses", requestBodyValues: {}, statusCode: 429, responseHeaders: { "retry-after": "0" }, data: { error: { code: "rate_limit_exceeded" } } });
      },
    });
    const error = await fromAiSdk(model, { resilience: { maxRetries: 1, initialDelayMs: 1, maxDelayMs: 5 } }).complete({ messages: [human("hi")], tools: [] }).catch((e: unknown) => e);
    expect(attempts).toBe(2);
    expect(error).toBeInstanceOf(ModelError);
    expect(error).toMatchObject({ kind: "http", status: 429, code: "rate_limit_exceeded", retryable: true });
  });
});
