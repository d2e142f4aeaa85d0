import { join } from "node:path";
import { afterEach, expect } from "vitest";
import { z } from "zod";
import { fromAiSdk, type AiSdkLanguageModel } from "../../ai-sdk.js";
import { createReactMachine, defineTool, human, runAgent, type ModelCallEvent, type ModelTurn } from "../../index.js";
import { loadRecording, replayInteractions, startOpenAIServer, type OpenAIServer, type RecordedInteraction, type Respond } from "../../testing.js";

/** The path of a recording under test/fixtures/<api>/vercel-ai/. */
export function fixturePath(api: "anthropic" | "openai", path: string): string {
  return join(import.meta.dirname, "..", "fixtures", api, "vercel-ai", path);
}

/** The interactions of a recording under test/fixtures/<api>/vercel-ai/. */
export function recordingsOf(api: "anthropic" | "openai"): (path: string) => RecordedInteraction[] {
  return (path) => loadRecording(fixturePath(api, path)).interactions;
}

/** The answer a Chat Completions recording streams: its content deltas, joined. */
export function recordedChatText(interaction: RecordedInteraction): string {
  const reply = interaction.reply;
  if (reply.kind !== "sse") throw new Error(`the recording's reply is ${reply.kind}, not a stream`);
  return reply.body
    .split("\n")
    .filter((line) => line.startsWith("data: {"))
    .map((line) => (JSON.parse(line.slice(6)) as { choices: { delta?: { content?: string } }[] }).choices[0]?.delta?.content ?? "")
    .join("");
}

/** A loopback server per test, started by the returned function and closed after the test. */
export function loopbackPerTest(): (respond: Respond) => Promise<OpenAIServer> {
  let server: OpenAIServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });
  return async (respond) => (server = await startOpenAIServer({ respond }));
}

/**
 * One call of a Responses API model (from @ai-sdk/openai, whichever major) against the recording
 * openai-responses/openai-reasoning-encrypted-content.1: its reasoning summary streams as
 * reasoning.delta, its calculator calls come back whole.
 */
export async function expectRecordedReasoning(model: AiSdkLanguageModel): Promise<ModelTurn> {
  const events: ModelCallEvent[] = [];
  const calculator = { type: "function" as const, function: { name: "calculator", description: "Arithmetic", parameters: { type: "object", properties: { a: { type: "number" }, b: { type: "number" }, op: { type: "string" } } } } };
  const turn = await fromAiSdk(model).complete({ messages: [human("(12 + 7) * 3 * 10, step by step")], tools: [calculator] }, { onEvent: (event) => events.push(event) });
  expect(turn.reasoning).toMatch(/^\*\*Calculating step-by-step using calculator\*\*/);
  expect(events.filter((event) => event.type === "reasoning.delta").map((event) => event.delta).join("")).toBe(turn.reasoning);
  expect(turn.toolCalls.length).toBeGreaterThan(0);
  for (const call of turn.toolCalls) {
    expect(call.name).toBe("calculator");
    expect(() => JSON.parse(call.arguments)).not.toThrow();
  }
  expect(turn.finishReason).toBe("tool_calls");
  return turn;
}

/**
 * An agent on `fromAiSdk(model, { stream: false })` against the whole (JSON) recordings of a Chat
 * Completions tool call (groq) and answer (openai): plain requests, the recorded answer and both
 * recorded usages. `modelAt` makes the provider's chat model for the server's base URL.
 */
export async function expectRecordedWholeRun(startServer: (respond: Respond) => Promise<OpenAIServer>, modelAt: (baseURL: string) => AiSdkLanguageModel): Promise<void> {
  const recorded = recordingsOf("openai");
  const server = await startServer(replayInteractions([...recorded("groq/groq-tool-call.json"), ...recorded("openai/openai-text.json")]));
  const weather = defineTool({ name: "weather", description: "The weather where the user is", parameters: z.object({}), execute: async () => "sunny" });
  const output = await runAgent(createReactMachine({ modelClient: fromAiSdk(modelAt(server.baseURL), { stream: false }), tools: [weather] }), { messages: [human("What's the weather?")] });
  expect(output.status).toBe("succeeded");
  const answer = recorded("openai/openai-text.json")[0]!.reply as { kind: "json"; body: { choices: { message: { content: string } }[]; usage: { prompt_tokens: number } } };
  expect(output.finalAnswer).toBe(answer.body.choices[0]!.message.content);
  // Both recorded usages, added up: the tool call's 218 prompt tokens and the answer's.
  expect(output.usage!.promptTokens).toBe(218 + answer.body.usage.prompt_tokens);
  const bodies = server.requests.map((request) => request.body as { stream?: boolean; messages: { role: string; content?: unknown }[] });
  expect(bodies.map((body) => body.stream)).toEqual([undefined, undefined]);
  expect(bodies[1]!.messages.find((message) => message.role === "tool")).toMatchObject({ content: "sunny" });
}
