import { createOpenAI } from "@ai-sdk/openai";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { fromAiSdk } from "../../ai-sdk.js";
import { createReactMachine, defineTool, human, runAgent, type ModelCallEvent } from "../../index.js";
import { replayInteractions, type Respond } from "../../testing.js";
import { loopbackPerTest, recordingsOf } from "./loopback.js";

/*
 * The real @ai-sdk/openai provider, over HTTP, against the loopback OpenAI-compatible server
 * replaying recordings of real traffic (test/fixtures/openai, see SOURCES.md): Chat Completions
 * through `openai.chat()` and the Responses API through `openai.responses()`.
 */

const recorded = recordingsOf("openai");
const startServer = loopbackPerTest();

async function provider(respond: Respond) {
  const server = await startServer(respond);
  return { openai: createOpenAI({ baseURL: server.baseURL, apiKey: "sk-test" }), server };
}

describe("fromAiSdk with @ai-sdk/openai against the loopback server", () => {
  it("Chat Completions: a recorded tool call runs, the recorded answer streams, usage adds up", async () => {
    const { openai, server } = await provider(replayInteractions([...recorded("groq/groq-tool-call.chunks.txt"), ...recorded("openai/openai-text.chunks.txt")]));
    const weather = defineTool({ name: "weather", description: "The weather where the user is", parameters: z.object({}), execute: async () => "sunny" });
    const machine = createReactMachine({ modelClient: fromAiSdk(openai.chat("gpt-4.1-nano")), tools: [weather] });
    const output = await runAgent(machine, { messages: [human("What's the weather?")] });
    expect(output.status).toBe("succeeded");
    expect(output.finalAnswer!.length).toBeGreaterThan(100);
    const chunks = recorded("openai/openai-text.chunks.txt")[0]!.reply;
    expect(chunks.kind).toBe("sse");
    // The answer is the recorded deltas, joined.
    const recordedText = (chunks as { body: string }).body
      .split("\n")
      .filter((line) => line.startsWith("data: {"))
      .map((line) => (JSON.parse(line.slice(6)) as { choices: { delta?: { content?: string } }[] }).choices[0]?.delta?.content ?? "")
      .join("");
    expect(output.finalAnswer).toBe(recordedText);
    expect(output.usage).toMatchObject({ promptTokens: expect.any(Number), cachedPromptTokens: 0, reasoningTokens: 0 });
    expect(server.requests.map((request) => request.path)).toEqual(["/v1/chat/completions", "/v1/chat/completions"]);
    const second = server.requests[1]!.body as { messages: { role: string; tool_call_id?: string; content?: unknown }[] };
    expect(second.messages.find((message) => message.role === "tool")).toMatchObject({ content: "sunny" });
  });

  it("Responses API: the recorded reasoning summary streams as reasoning.delta, the function calls come back whole", async () => {
    const { openai } = await provider(replayInteractions(recorded("openai-responses/openai-reasoning-encrypted-content.1.chunks.txt")));
    const events: ModelCallEvent[] = [];
    const calculator = { type: "function" as const, function: { name: "calculator", description: "Arithmetic", parameters: { type: "object", properties: { a: { type: "number" }, b: { type: "number" }, op: { type: "string" } } } } };
    const turn = await fromAiSdk(openai.responses("gpt-5-mini")).complete({ messages: [human("(12 + 7) * 3 * 10, step by step")], tools: [calculator] }, { onEvent: (event) => events.push(event) });
    expect(turn.reasoning).toMatch(/^\*\*Calculating step-by-step using calculator\*\*/);
    expect(events.filter((event) => event.type === "reasoning.delta").map((event) => event.delta).join("")).toBe(turn.reasoning);
    expect(turn.toolCalls.length).toBeGreaterThan(0);
    for (const call of turn.toolCalls) {
      expect(call.name).toBe("calculator");
      expect(() => JSON.parse(call.arguments)).not.toThrow();
    }
    expect(turn.finishReason).toBe("tool_calls");
  });
});
