import { join } from "node:path";
import { afterEach, expect } from "vitest";
import { fromAiSdk, type AiSdkLanguageModel } from "../../ai-sdk.js";
import { human, type ModelCallEvent, type ModelTurn } from "../../index.js";
import { loadRecording, startOpenAIServer, type OpenAIServer, type RecordedInteraction, type Respond } from "../../testing.js";

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
