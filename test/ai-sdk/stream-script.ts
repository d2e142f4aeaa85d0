import { expect } from "vitest";
import { z } from "zod";
import { defineTool, type ModelCallEvent, type ModelTurn } from "../../index.js";

/*
 * A mock model's stream parts, as specification v3 (AI SDK 6's mock) and v4 (AI SDK 7's) both
 * spell them, and the greeting both mock suites stream: one script for test/ai-sdk/mock-model.test.ts
 * and test/ai-sdk-7/mock-model-v4.test.ts.
 */

export const usage = (input: number, output: number, details: { cacheRead?: number; reasoning?: number } = {}) => ({
  inputTokens: { total: input, noCache: input - (details.cacheRead ?? 0), cacheRead: details.cacheRead, cacheWrite: undefined },
  outputTokens: { total: output, text: output - (details.reasoning ?? 0), reasoning: details.reasoning },
});

export const finish = (reason: "stop" | "tool-calls", u = usage(10, 5)) => ({ type: "finish" as const, finishReason: { unified: reason, raw: reason }, usage: u });

export const text = (id: string, ...deltas: string[]) => [
  { type: "text-start" as const, id },
  ...deltas.map((delta) => ({ type: "text-delta" as const, id, delta })),
  { type: "text-end" as const, id },
];

export const toolCall = (id: string, name: string, ...fragments: string[]) => [
  { type: "tool-input-start" as const, id, toolName: name },
  ...fragments.map((delta) => ({ type: "tool-input-delta" as const, id, delta })),
  { type: "tool-input-end" as const, id },
  { type: "tool-call" as const, toolCallId: id, toolName: name, input: fragments.join("") },
];

/** Reasoning, then text, then a finish whose usage has reasoning and cache-read details. */
export const greeting = () => [
  { type: "reasoning-start" as const, id: "r" },
  { type: "reasoning-delta" as const, id: "r", delta: "The user greets; " },
  { type: "reasoning-delta" as const, id: "r", delta: "greet back." },
  { type: "reasoning-end" as const, id: "r" },
  ...text("t", "Hello", " there"),
  finish("stop", usage(120, 40, { cacheRead: 100, reasoning: 25 })),
];

/** The greeting as a jianmu turn and its events. */
export function expectGreeting(turn: ModelTurn, events: readonly ModelCallEvent[], model: string): void {
  expect(turn).toMatchObject({ content: "Hello there", reasoning: "The user greets; greet back.", toolCalls: [], finishReason: "stop", model });
  expect(turn.usage).toEqual({ promptTokens: 120, completionTokens: 40, totalTokens: 160, reasoningTokens: 25, cachedPromptTokens: 100 });
  expect(events.map((event) => event.type)).toEqual(["model.call.started", "reasoning.delta", "reasoning.delta", "text.delta", "text.delta", "model.call.completed"]);
  expect(events.filter((event) => event.type === "text.delta").map((event) => event.delta)).toEqual(["Hello", " there"]);
}

/** The tool both mock suites' agents call. */
export const weather = defineTool({
  name: "get_weather",
  description: "Current weather of a city",
  parameters: z.object({ city: z.string() }),
  execute: async ({ city }) => `${city}: 18°C, clear`,
});

type ScriptPart = { type: string; id?: string; delta?: string; providerMetadata?: Record<string, Record<string, unknown>>; toolCallId?: string; toolName?: string; input?: string; finishReason?: unknown; usage?: unknown };

/**
 * A script's stream parts as the one whole answer a model's `doGenerate` returns (specification v3
 * and v4 spell it alike): each text and reasoning block joined, each tool call with its raw input.
 */
export function wholeAnswer(parts: readonly ScriptPart[]) {
  const content: ({ type: "text"; text: string } | { type: "reasoning"; text: string; providerMetadata?: Record<string, Record<string, unknown>> } | { type: "tool-call"; toolCallId: string; toolName: string; input: string })[] = [];
  const open = new Map<string, { text: string }>();
  let end: ScriptPart | undefined;
  for (const part of parts) {
    if (part.type === "text-start" || part.type === "reasoning-start") {
      const block = part.type === "text-start" ? { type: "text" as const, text: "" } : { type: "reasoning" as const, text: "", ...(part.providerMetadata ? { providerMetadata: part.providerMetadata } : {}) };
      open.set(part.id!, block);
      content.push(block);
    } else if (part.type === "text-delta" || part.type === "reasoning-delta") open.get(part.id!)!.text += part.delta;
    else if (part.type === "tool-call") content.push({ type: "tool-call", toolCallId: part.toolCallId!, toolName: part.toolName!, input: part.input! });
    else if (part.type === "finish") end = part;
  }
  if (!end) throw new Error("the script has no finish part");
  return { content, finishReason: end.finishReason, usage: end.usage, warnings: [] };
}

const signed = { mock: { signature: "sig-1" } };

/** Two turns: a signed reasoning block and two parallel weather calls, then the answer. */
export const twoCities = () => [
  [
    { type: "reasoning-start" as const, id: "r1", providerMetadata: signed },
    { type: "reasoning-delta" as const, id: "r1", delta: "Two cities." },
    { type: "reasoning-end" as const, id: "r1" },
    ...toolCall("call_1", "get_weather", '{"city":', '"Paris"}'),
    ...toolCall("call_2", "get_weather", '{"city":"Oslo"}'),
    finish("tool-calls"),
  ],
  [...text("t", "Paris 18°C, Oslo 18°C."), finish("stop")],
];

/** The second call of `twoCities`: the signed block and both calls went back, then both results. */
export function expectTwoCitiesPrompt(prompt: readonly { role: string; content: unknown }[]): void {
  expect(prompt.map((message) => message.role)).toEqual(["system", "user", "assistant", "tool"]);
  expect(prompt[2]!.content).toEqual([
    expect.objectContaining({ type: "reasoning", text: "Two cities.", providerOptions: signed }),
    expect.objectContaining({ type: "tool-call", toolCallId: "call_1", toolName: "get_weather", input: { city: "Paris" } }),
    expect.objectContaining({ type: "tool-call", toolCallId: "call_2", toolName: "get_weather", input: { city: "Oslo" } }),
  ]);
  expect(prompt[3]!.content).toEqual([
    expect.objectContaining({ type: "tool-result", toolCallId: "call_1", output: { type: "text", value: "Paris: 18°C, clear" } }),
    expect.objectContaining({ type: "tool-result", toolCallId: "call_2", output: { type: "text", value: "Oslo: 18°C, clear" } }),
  ]);
}
