import { createOpenAI } from "@ai-sdk/openai";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { fromAiSdk } from "../../ai-sdk.js";
import { createReactMachine, defineTool, human, runAgent } from "../../index.js";
import { replayInteractions, type Respond } from "../../testing.js";
import { expectRecordedReasoning, expectRecordedWholeRun, loopbackPerTest, recordedChatText, recordingsOf } from "./loopback.js";

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
    // The answer is the recorded deltas, joined.
    expect(output.finalAnswer).toBe(recordedChatText(recorded("openai/openai-text.chunks.txt")[0]!));
    expect(output.usage).toMatchObject({ promptTokens: expect.any(Number), cachedPromptTokens: 0, reasoningTokens: 0 });
    expect(server.requests.map((request) => request.path)).toEqual(["/v1/chat/completions", "/v1/chat/completions"]);
    const second = server.requests[1]!.body as { messages: { role: string; tool_call_id?: string; content?: unknown }[] };
    expect(second.messages.find((message) => message.role === "tool")).toMatchObject({ content: "sunny" });
  });

  it("stream: false: the recorded whole answers (a tool call, then the text) come back from plain JSON requests", async () => {
    await expectRecordedWholeRun(startServer, (baseURL) => createOpenAI({ baseURL, apiKey: "sk-test" }).chat("gpt-4.1-nano"));
  });

  it("Responses API: the recorded reasoning summary streams as reasoning.delta, the function calls come back whole", async () => {
    const { openai } = await provider(replayInteractions(recorded("openai-responses/openai-reasoning-encrypted-content.1.chunks.txt")));
    await expectRecordedReasoning(openai.responses("gpt-5-mini"));
  });
});
