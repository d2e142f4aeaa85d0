import { MockLanguageModelV3 } from "ai/test";
import type { LanguageModelV3CallOptions, LanguageModelV3GenerateResult, LanguageModelV3StreamPart } from "@ai-sdk/provider";
import { describe, expect, it } from "vitest";
import { fromAiSdk } from "../../ai-sdk.js";
import { createReactMachine, human, ModelError, runAgent, type ModelCallEvent } from "../../index.js";
import { expectTwoCitiesPrompt, finish, greeting, text, toolCall, twoCities, weather, wholeAnswer } from "./stream-script.js";

/*
 * Run on AI SDK 6 and again on AI SDK 7 (vitest.config.ts's two projects).
 * fromAiSdk(model, { stream: false }): each call asks the model for its whole answer
 * (`generateText`, the model's `doGenerate`), never its stream; the answer becomes the same turn a
 * stream of it would.
 */

/** A mock model answering each script whole, in turn; its stream must not be asked for. */
function scripted(...turns: LanguageModelV3StreamPart[][]) {
  const calls: LanguageModelV3CallOptions[] = [];
  const model = new MockLanguageModelV3({
    provider: "mock.whole",
    modelId: "mock-whole",
    doGenerate: async (options) => {
      calls.push(options);
      const turn = turns[calls.length - 1];
      if (!turn) throw new Error(`the script has ${turns.length} turns; call ${calls.length} has none`);
      return wholeAnswer(turn) as LanguageModelV3GenerateResult;
    },
    doStream: async () => {
      throw new Error("stream: false must not stream");
    },
  });
  return { model, calls };
}

describe("fromAiSdk with stream: false", () => {
  it("reads the whole answer: text and reasoning reach a listener as one delta each, usage with its details", async () => {
    const { model, calls } = scripted(greeting());
    const events: ModelCallEvent[] = [];
    const turn = await fromAiSdk(model, { stream: false }).complete({ messages: [human("hi")], tools: [] }, { onEvent: (event) => events.push(event) });
    expect(calls).toHaveLength(1);
    expect(turn).toMatchObject({ content: "Hello there", reasoning: "The user greets; greet back.", toolCalls: [], finishReason: "stop", model: "mock-whole" });
    expect(turn.usage).toEqual({ promptTokens: 120, completionTokens: 40, totalTokens: 160, reasoningTokens: 25, cachedPromptTokens: 100 });
    expect(events.map((event) => event.type)).toEqual(["model.call.started", "reasoning.delta", "text.delta", "model.call.completed"]);
    expect(events.filter((event) => event.type === "text.delta").map((event) => event.delta)).toEqual(["Hello there"]);
  });

  it("runs a ReAct loop: the parallel calls' arguments come back as JSON, the second call carries both results and a signed reasoning block", async () => {
    const { model, calls } = scripted(...twoCities());
    const output = await runAgent(createReactMachine({ modelClient: fromAiSdk(model, { stream: false }), tools: [weather] }), { messages: [human("Weather in Paris and Oslo?")] });
    expect(output).toMatchObject({ status: "succeeded", finalAnswer: "Paris 18°C, Oslo 18°C." });
    expect(output.usage).toMatchObject({ promptTokens: 20, completionTokens: 10 });
    expect(output.messages.find((message) => message.role === "assistant")).toMatchObject({
      toolCalls: [
        { id: "call_1", name: "get_weather", arguments: '{"city":"Paris"}' },
        { id: "call_2", name: "get_weather", arguments: '{"city":"Oslo"}' },
      ],
    });
    expectTwoCitiesPrompt(calls[1]!.prompt);
  });

  it("arguments the SDK cannot parse reach the loop as the model wrote them, and the loop tells the model", async () => {
    const { model, calls } = scripted([...toolCall("call_1", "get_weather", '{"city": Paris'), finish("tool-calls")], [...text("t", "Sorry."), finish("stop")]);
    const output = await runAgent(createReactMachine({ modelClient: fromAiSdk(model, { stream: false }), tools: [weather] }), { messages: [human("Weather in Paris?")] });
    expect(output.status).toBe("succeeded");
    expect(output.messages.find((message) => message.role === "assistant")).toMatchObject({ toolCalls: [{ id: "call_1", arguments: '{"city": Paris' }] });
    const result = calls[1]!.prompt.find((message) => message.role === "tool")!.content[0] as { output: { type: string; value: string } };
    expect(result.output.value).toMatch(/JSON/i);
  });

  it("a provider error is retried under jianmu's policy and ends as a typed ModelError; a hung call ends at the time limit", async () => {
    const { APICallError } = await import("ai");
    let attempts = 0;
    const failing = new MockLanguageModelV3({
      doGenerate: async () => {
        attempts += 1;
        throw new APICallError({ message: "Overloaded", url: "http://127.0.0.1/v1/messages", requestBodyValues: {}, statusCode: 529, responseHeaders: { "retry-after": "0" }, data: { error: { type: "overloaded_error" } } });
      },
    });
    const error = await fromAiSdk(failing, { stream: false, resilience: { maxRetries: 1, initialDelayMs: 1, maxDelayMs: 5 } }).complete({ messages: [human("hi")], tools: [] }).catch((e: unknown) => e);
    expect(attempts).toBe(2);
    expect(error).toBeInstanceOf(ModelError);
    expect(error).toMatchObject({ kind: "http", status: 529, code: "overloaded_error", retryable: true });

    let signal: AbortSignal | undefined;
    const hung = new MockLanguageModelV3({
      doGenerate: (options) => {
        signal = options.abortSignal;
        return new Promise((_, reject) => options.abortSignal?.addEventListener("abort", () => reject(options.abortSignal?.reason)));
      },
    });
    const late = await fromAiSdk(hung, { stream: false, timeoutMs: 50, resilience: { maxRetries: 0 } }).complete({ messages: [human("hi")], tools: [] }).catch((e: unknown) => e);
    expect(late).toMatchObject({ name: "ModelError", kind: "timeout", message: expect.stringContaining("no complete answer within 50 ms") });
    expect(signal?.aborted).toBe(true);
  });

  it("a cancelled call aborts the provider's request and fails as aborted", async () => {
    const caller = new AbortController();
    const model = new MockLanguageModelV3({
      doGenerate: (options) => {
        setTimeout(() => caller.abort(), 5);
        return new Promise((_, reject) => options.abortSignal?.addEventListener("abort", () => reject(options.abortSignal?.reason)));
      },
    });
    await expect(fromAiSdk(model, { stream: false }).complete({ messages: [human("hi")], tools: [] }, { signal: caller.signal })).rejects.toMatchObject({ name: "ModelError", kind: "aborted" });
  });

  it("a native structured output goes as the SDK's JSON response format; an answer that misses its schema still reaches the loop, whose output check judges it", async () => {
    const { model, calls } = scripted([...text("t", '{"town":5}'), finish("stop")]);
    const schema = { type: "object", properties: { city: { type: "string" } }, required: ["city"], additionalProperties: false };
    const turn = await fromAiSdk(model, { stream: false }).complete({ messages: [human("Where?")], tools: [], extraParams: { response_format: { type: "json_schema", json_schema: { name: "answer", schema, strict: true } } } });
    expect(calls[0]!.responseFormat).toMatchObject({ type: "json", name: "answer", schema: expect.objectContaining({ required: ["city"] }) });
    expect(turn).toMatchObject({ content: '{"town":5}', finishReason: "stop" });
  });

  it("stream must be a boolean", () => {
    const { model } = scripted();
    expect(() => fromAiSdk(model, { stream: "no" as never })).toThrow(/invalid model client options: stream: /);
  });
});
