import type { Tracer } from "@opentelemetry/api";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { expect } from "vitest";
import { z } from "zod";
import { ModelClient } from "../../index.js";
import { startOpenAIServer, type OpenAIServer, type Reply } from "../../testing/openai-server.js";
import { defineTool } from "../../tools/tool.js";
import { scriptedTurns } from "../../examples/support/turns.js";

export { textTurn, toolCallTurn } from "../../examples/support/turns.js";

/** The key the model client is given: it must never reach a span. */
export const API_KEY = "sk-test-otel-NEVER-IN-A-SPAN-3b9e7c1d5a";

/** A tracer whose spans are kept in memory (no global registration). */
export function memoryTracing() {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const tracer: Tracer = provider.getTracer("jianmu-test");
  return {
    tracer,
    /** Every span ended so far, in the order they ended. */
    spans: (): ReadableSpan[] => exporter.getFinishedSpans(),
    shutdown: () => provider.shutdown(),
  };
}

/** The loopback OpenAI-compatible server answering the scripted turns in order, and a real client on it. */
export async function scriptedEndpoint(turns: readonly Reply[]): Promise<{ server: OpenAIServer; modelClient: ModelClient }> {
  const server = await startOpenAIServer({ respond: scriptedTurns(turns).respond });
  // Retries without waiting, so a retried call costs the test nothing.
  const resilience = { initialDelayMs: 1, maxDelayMs: 5, backoffMultiplier: 2, jitter: 0 };
  const modelClient = ModelClient.resolve({ baseURL: server.baseURL, apiKey: API_KEY, model: "gpt-4o-mini", resilience });
  return { server, modelClient };
}

export const addTool = defineTool({
  name: "add",
  description: "Add two numbers.",
  parameters: z.object({ a: z.number(), b: z.number() }),
  execute: ({ a, b }) => a + b,
});

export const saveNoteTool = defineTool({
  name: "save_note",
  description: "Save a note for the user.",
  parameters: z.object({ text: z.string() }),
  effectTags: ["writes"],
  execute: ({ text }) => `saved: ${text}`,
});

export const brokenTool = defineTool({
  name: "lookup",
  description: "Look something up (its database is down).",
  parameters: z.object({ query: z.string() }),
  execute: () => {
    throw new Error("the database at db.internal refused the connection");
  },
});

export function byName(spans: readonly ReadableSpan[], name: string): ReadableSpan[] {
  return spans.filter((span) => span.name === name);
}

export function one(spans: readonly ReadableSpan[], name: string): ReadableSpan {
  const found = byName(spans, name);
  expect(found.map((span) => span.name), `exactly one span named ${name}`).toEqual([name]);
  return found[0]!;
}

/** True when `child`'s parent is `parent`, in the same trace. */
export function isChildOf(child: ReadableSpan, parent: ReadableSpan): boolean {
  return child.parentSpanContext?.spanId === parent.spanContext().spanId && child.spanContext().traceId === parent.spanContext().traceId;
}

/** Everything a span could leak through: its name, attributes, events (with theirs), links and status. */
export function everythingIn(spans: readonly ReadableSpan[]): string {
  return JSON.stringify(
    spans.map((span) => ({
      name: span.name,
      attributes: span.attributes,
      events: span.events.map((event) => ({ name: event.name, attributes: event.attributes })),
      links: span.links.map((link) => link.attributes),
      status: span.status,
    })),
  );
}

export function expectNoKey(spans: readonly ReadableSpan[]): void {
  expect(spans.length).toBeGreaterThan(0);
  const text = everythingIn(spans);
  expect(text).not.toContain(API_KEY);
  expect(text).not.toContain(API_KEY.slice(0, 16));
}
