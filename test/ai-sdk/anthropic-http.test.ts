import { createAnthropic } from "@ai-sdk/anthropic";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { fromAiSdk } from "../../ai-sdk.js";
import { createReactMachine, defineTool, human, runAgent, type Message, type ModelCallEvent } from "../../index.js";
import { replayInteractions, replies, type Respond } from "../../testing.js";
import { fixturePath, loopbackPerTest, recordingsOf } from "./loopback.js";

/*
 * The real @ai-sdk/anthropic provider, over HTTP, against the loopback server replaying recordings
 * of the real Anthropic Messages API (test/fixtures/anthropic, see SOURCES.md): what jianmu hands
 * the SDK reaches the wire as Anthropic's own format, and Anthropic's stream comes back as a turn.
 */

const recorded = recordingsOf("anthropic");
const startServer = loopbackPerTest();

async function claude(respond: Respond) {
  const server = await startServer(respond);
  const anthropic = createAnthropic({ baseURL: server.baseURL, apiKey: "sk-ant-test" });
  return { model: anthropic("claude-sonnet-4-5"), server };
}

interface WireMessage {
  role: string;
  content: string | Record<string, unknown>[];
}

describe("fromAiSdk with @ai-sdk/anthropic against a Messages API replay", () => {
  it("streams the recorded answer as text deltas and reports its usage", async () => {
    const { model, server } = await claude(replayInteractions(recorded("anthropic-text.chunks.txt")));
    const events: ModelCallEvent[] = [];
    const turn = await fromAiSdk(model).complete({ messages: [{ role: "system", content: "Be kind." }, human("Hello, how are you?")], tools: [], maxTokens: 256 }, { onEvent: (event) => events.push(event) });
    expect(turn.content).toMatch(/^Hello! I'm doing well, thank you for asking\. How are you doing today\?/);
    expect(turn).toMatchObject({ finishReason: "stop", model: "claude-sonnet-4-5", serverModel: "claude-sonnet-4-5-20250929" });
    expect(turn.usage).toMatchObject({ promptTokens: 12, completionTokens: 30, totalTokens: 42, cachedPromptTokens: 0 });
    const deltas = events.filter((event) => event.type === "text.delta");
    expect(deltas.length).toBeGreaterThan(3);
    expect(deltas.map((event) => event.delta).join("")).toBe(turn.content);
    // Anthropic's own wire format: the system prompt apart, max_tokens, a stream.
    const request = server.requests[0]!;
    expect(request.path).toBe("/v1/messages");
    expect(request.headers["x-api-key"]).toBe("sk-ant-test");
    expect(request.body).toMatchObject({ model: "claude-sonnet-4-5", stream: true, max_tokens: 256, system: [{ type: "text", text: "Be kind." }], messages: [{ role: "user", content: [{ type: "text", text: "Hello, how are you?" }] }] });
  });

  it("runs an agent: the recorded tool_use is executed and its result goes back as a tool_result", async () => {
    const { model, server } = await claude(replayInteractions([...recorded("anthropic-tool-no-args.chunks.txt"), ...recorded("anthropic-text.chunks.txt")]));
    let ran = 0;
    const updateIssueList = defineTool({
      name: "updateIssueList",
      description: "Refresh the list of open issues",
      parameters: z.object({}),
      execute: async () => {
        ran += 1;
        return "3 open issues";
      },
    });
    const machine = createReactMachine({ modelClient: fromAiSdk(model), tools: [updateIssueList] });
    const output = await runAgent(machine, { messages: [human("Please update the issue list.")] });
    expect(output.status).toBe("succeeded");
    expect(output.finalAnswer).toMatch(/^Hello! I'm doing well/);
    expect(ran).toBe(1);
    expect(output.usage).toMatchObject({ promptTokens: 565 + 12, completionTokens: 48 + 30 });
    const first = server.requests[0]!.body as { tools: Record<string, unknown>[] };
    expect(first.tools).toEqual([expect.objectContaining({ name: "updateIssueList", description: "Refresh the list of open issues", input_schema: expect.objectContaining({ type: "object" }) })]);
    const second = (server.requests[1]!.body as { messages: WireMessage[] }).messages;
    expect(second.map((message) => message.role)).toEqual(["user", "assistant", "user"]);
    expect(second[1]!.content).toEqual([
      expect.objectContaining({ type: "text", text: "I'll update the issue list for you." }),
      expect.objectContaining({ type: "tool_use", id: "toolu_01QE1WLsSVp5hy5Q3GmGTmjP", name: "updateIssueList", input: {} }),
    ]);
    expect(second[2]!.content).toEqual([expect.objectContaining({ type: "tool_result", tool_use_id: "toolu_01QE1WLsSVp5hy5Q3GmGTmjP", content: "3 open issues" })]);
  });

  it("extended thinking: provider options reach the wire, thinking streams as reasoning.delta", async () => {
    const { model, server } = await claude(replayInteractions(recorded("anthropic-clear-thinking.1.chunks.txt")));
    const events: ModelCallEvent[] = [];
    const client = fromAiSdk(model, { providerOptions: { anthropic: { thinking: { type: "enabled", budgetTokens: 1024 } } } });
    const turn = await client.complete({ messages: [human("And divided by 5?")], tools: [] }, { onEvent: (event) => events.push(event) });
    expect(server.requests[0]!.body).toMatchObject({ thinking: { type: "enabled", budget_tokens: 1024 } });
    expect(turn.content).toBe("925 ÷ 5 = 185");
    expect(turn.reasoning).toBe("The previous result was 925. Now I need to divide that by 5.\n\n925 ÷ 5 = 185");
    const reasoning = events.filter((event) => event.type === "reasoning.delta").map((event) => event.delta);
    expect(reasoning.join("")).toBe(turn.reasoning);
    // Reasoning streams before the answer, as the model wrote it.
    const kinds = events.map((event) => event.type).filter((type) => type.endsWith(".delta"));
    expect(kinds.indexOf("text.delta")).toBeGreaterThan(kinds.lastIndexOf("reasoning.delta"));
  });

  it("the thinking block and its signature are kept on the assistant turn and sent back to the same model, not to another", async () => {
    const { model, server } = await claude(replayInteractions([...recorded("anthropic-clear-thinking.1.chunks.txt"), ...recorded("anthropic-text.chunks.txt"), ...recorded("anthropic-text.chunks.txt")]));
    const client = fromAiSdk(model, { providerOptions: { anthropic: { thinking: { type: "enabled", budgetTokens: 1024 } } } });
    const first = await client.complete({ messages: [human("And divided by 5?")], tools: [] });
    const signature = (/"signature":"([^"]+)"/.exec(readFileSync(fixturePath("anthropic", "anthropic-clear-thinking.1.chunks.txt"), "utf8").split("signature_delta")[1]!) ?? [])[1];
    expect(signature).toMatch(/^EvQB/);
    expect(first.reasoningItems).toMatchObject({ api: "ai-sdk", endpoint: "ai-sdk:anthropic.messages", model: "claude-sonnet-4-5", items: [{ content: [first.reasoning], providerMetadata: { anthropic: { signature } } }] });
    // Through a checkpoint the message is JSON: what comes back from JSON is what is sent.
    const assistant = JSON.parse(JSON.stringify({ role: "assistant", content: first.content, reasoningItems: first.reasoningItems })) as Message;
    await client.complete({ messages: [human("And divided by 5?"), assistant, human("Thanks!")], tools: [] });
    const sent = (server.requests[1]!.body as { messages: WireMessage[] }).messages[1]!;
    expect(sent.content).toEqual([expect.objectContaining({ type: "thinking", thinking: first.reasoning, signature }), expect.objectContaining({ type: "text", text: "925 ÷ 5 = 185" })]);
    // Another model cannot read them: it gets the answer alone.
    await fromAiSdk(createAnthropic({ baseURL: server.baseURL, apiKey: "k" })("claude-haiku-4-5")).complete({ messages: [human("And divided by 5?"), assistant, human("Thanks!")], tools: [] });
    expect((server.requests[2]!.body as { messages: WireMessage[] }).messages[1]!.content).toEqual([expect.objectContaining({ type: "text", text: "925 ÷ 5 = 185" })]);
  });

  it("an image and a PDF go out as Anthropic image and document blocks", async () => {
    const { model, server } = await claude(replayInteractions(recorded("anthropic-text.chunks.txt")));
    const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
    const pdf = Buffer.from("%PDF-1.4\n%%EOF\n").toString("base64");
    await fromAiSdk(model).complete({
      messages: [human([{ type: "text", text: "What are these?" }, { type: "image", data: png, mediaType: "image/png" }, { type: "file", data: pdf, mediaType: "application/pdf", filename: "a.pdf" }])],
      tools: [],
    });
    const [message] = (server.requests[0]!.body as { messages: WireMessage[] }).messages;
    expect(message!.content).toEqual([
      expect.objectContaining({ type: "text", text: "What are these?" }),
      expect.objectContaining({ type: "image", source: { type: "base64", media_type: "image/png", data: png } }),
      expect.objectContaining({ type: "document", source: { type: "base64", media_type: "application/pdf", data: pdf } }),
    ]);
  });

  it("a part the provider cannot take is refused before any request, naming it", async () => {
    const { model, server } = await claude(replayInteractions(recorded("anthropic-text.chunks.txt")));
    const wav = Buffer.from("RIFF....WAVEfmt ").toString("base64");
    const error = await fromAiSdk(model).complete({ messages: [human([{ type: "text", text: "Transcribe this" }, { type: "file", data: wav, mediaType: "audio/wav" }])], tools: [] }).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: "ModelError", kind: "config", code: "unsupported_content", retryable: false, message: expect.stringMatching(/audio\/wav/) });
    expect(server.requests).toHaveLength(0);
  });

  it("an overloaded answer (HTTP 529) is retried under jianmu's policy; a 400 is not", async () => {
    const overloaded = replies.json({ type: "error", error: { type: "overloaded_error", message: "Overloaded" } }, 529);
    const answers = [overloaded, ...recorded("anthropic-text.chunks.txt").map((interaction) => interaction.reply)];
    const { model, server } = await claude(() => answers.shift() ?? replies.error(500, "no more"));
    const events: ModelCallEvent[] = [];
    const client = fromAiSdk(model, { resilience: { initialDelayMs: 1, maxDelayMs: 5 } });
    const turn = await client.complete({ messages: [human("hi")], tools: [] }, { onEvent: (event) => events.push(event) });
    expect(turn.content).toMatch(/^Hello!/);
    expect(server.requests).toHaveLength(2);
    expect(events.find((event) => event.type === "model.call.failed")).toMatchObject({ status: 529, code: "overloaded_error", next: "retry", kind: "http" });

    answers.push(replies.json({ type: "error", error: { type: "invalid_request_error", message: "max_tokens: Field required" } }, 400));
    const failure = await client.complete({ messages: [human("hi")], tools: [] }).catch((error: unknown) => error);
    expect(failure).toMatchObject({ name: "ModelError", kind: "http", status: 400, code: "invalid_request_error", retryable: false });
    expect((failure as Error).message).toContain("max_tokens: Field required");
    expect(server.requests).toHaveLength(3);
  });
});
