import { createOpenAI } from "ai-sdk-openai-v4";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { fromAiSdk } from "../../ai-sdk.js";
import { createReactMachine, defineTool, human, runAgent } from "../../index.js";
import { replayInteractions, type Respond } from "../../testing.js";
import { expectRecordedReasoning, expectRecordedWholeRun, loopbackPerTest, recordedChatText, recordingsOf } from "../ai-sdk/loopback.js";
import { capturedWarnings } from "./warnings.js";

/*
 * The real @ai-sdk/openai 4 (the provider package made for AI SDK 7: its models implement
 * specification v4) on ai 7, over HTTP, against the loopback OpenAI-compatible server replaying
 * recordings of real traffic (test/fixtures/openai, see SOURCES.md).
 */

const recorded = recordingsOf("openai");
const startServer = loopbackPerTest();
const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

async function provider(respond: Respond) {
  const server = await startServer(respond);
  return { openai: createOpenAI({ baseURL: server.baseURL, apiKey: "sk-test" }), server };
}

let warnings: ReturnType<typeof capturedWarnings>;
beforeEach(() => {
  warnings = capturedWarnings();
});
afterEach(() => warnings.stop());

describe("fromAiSdk with @ai-sdk/openai 4 on AI SDK 7 against the loopback server", () => {
  it("Chat Completions: a recorded tool call runs, the recorded answer streams, a user's image goes out as image_url", async () => {
    const { openai, server } = await provider(replayInteractions([...recorded("groq/groq-tool-call.chunks.txt"), ...recorded("openai/openai-text.chunks.txt")]));
    const model = openai.chat("gpt-4.1-nano");
    expect(model.specificationVersion).toBe("v4");
    const weather = defineTool({ name: "weather", description: "The weather where the user is", parameters: z.object({}), execute: async () => "sunny" });
    const machine = createReactMachine({ modelClient: fromAiSdk(model), tools: [weather] });
    const output = await runAgent(machine, { messages: [human([{ type: "text", text: "What's the weather? Here is the sky." }, { type: "image", data: png, mediaType: "image/png" }])] });
    expect(output.status).toBe("succeeded");
    expect(output.finalAnswer).toBe(recordedChatText(recorded("openai/openai-text.chunks.txt")[0]!));
    expect(output.usage).toMatchObject({ promptTokens: expect.any(Number), cachedPromptTokens: 0, reasoningTokens: 0 });
    expect(server.requests.map((request) => request.path)).toEqual(["/v1/chat/completions", "/v1/chat/completions"]);
    // The requests were made by the v4 provider package on ai 7.
    expect(server.requests[0]!.headers["user-agent"]).toMatch(/^ai-sdk-openai\/4\..* ai-sdk-provider-utils\/5\./);
    const first = server.requests[0]!.body as { messages: { role: string; content: unknown }[] };
    expect(first.messages.find((message) => message.role === "user")!.content).toEqual([
      { type: "text", text: "What's the weather? Here is the sky." },
      { type: "image_url", image_url: { url: `data:image/png;base64,${png}` } },
    ]);
    const second = server.requests[1]!.body as { messages: { role: string; content?: unknown }[] };
    expect(second.messages.find((message) => message.role === "tool")).toMatchObject({ content: "sunny" });
    expect(warnings.list).toEqual([]);
  });

  it("stream: false: the v4 provider's whole answers (a tool call, then the text) come back from plain JSON requests", async () => {
    await expectRecordedWholeRun(startServer, (baseURL) => createOpenAI({ baseURL, apiKey: "sk-test" }).chat("gpt-4.1-nano"));
    expect(warnings.list).toEqual([]);
  });

  it("Responses API: the recorded reasoning summary streams as reasoning.delta, the function calls come back whole", async () => {
    const { openai } = await provider(replayInteractions(recorded("openai-responses/openai-reasoning-encrypted-content.1.chunks.txt")));
    const turn = await expectRecordedReasoning(openai.responses("gpt-5-mini"));
    // The reasoning item's encrypted content is kept, to go back to the model that wrote it.
    expect(turn.reasoningItems?.items.length).toBeGreaterThan(0);
  });
});
