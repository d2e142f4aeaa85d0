import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createActor } from "xstate";
import { z } from "zod";
import { human } from "../../actors/messages.js";
import { ModelError } from "../../actors/model-client.js";
import { resolveModelClient } from "../../actors/openai/openai-model-client.js";
import { MemoryCheckpointStore } from "../../machines/persistence/checkpoints/memory-store.js";
import type { AgentEmitted } from "../../machines/contract/events.js";
import { persistAgent, restoreAgent } from "../../machines/persistence/persistence.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { runAgent } from "../../machines/runner.js";
import { replies, startOpenAIServer, toSse, type OpenAIServer, type Reply } from "../../testing/openai-server.js";
import { defineTool } from "../../tools/tool.js";
import { watchProcess } from "./process-watch.js";

/*
 * What an OpenAI-compatible server sends back, hostile or broken, over real HTTP: every response
 * ends in a typed outcome, with a message that says what really happened, and never corrupts the
 * run's usage, its token budget or its checkpoint.
 */

let server: OpenAIServer;
let plan: Reply[] = [];
beforeAll(async () => {
  server = await startOpenAIServer({ respond: () => plan.shift() ?? replies.error(500, "the test plan ran out") });
});
afterAll(() => server.close());

function client(retries = 2) {
  return resolveModelClient({
    baseURL: server.baseURL,
    apiKey: "sk-hostile-model-0000000000",
    model: "hostile",
    stream: true,
    timeoutMs: 5_000,
    resilience: { maxRetries: retries, initialDelayMs: 1, maxDelayMs: 5, jitter: 0 },
  });
}

const chunk = (delta: Record<string, unknown>, finish: string | null = null, extra: Record<string, unknown> = {}) => ({
  id: "c",
  object: "chat.completion.chunk",
  model: "hostile",
  choices: [{ index: 0, delta, finish_reason: finish }],
  ...extra,
});
const role = JSON.stringify(chunk({ role: "assistant", content: "" }));

/** A stream answering `text`, whose last chunk reports `usage` as given (any JSON value). */
function answer(text: string, usage: unknown): string {
  return toSse([chunk({ role: "assistant", content: "" }), chunk({ content: text }), chunk({}, "stop"), { id: "c", object: "chat.completion.chunk", model: "hostile", choices: [], usage }]);
}

async function failure(promise: Promise<unknown>): Promise<ModelError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ModelError);
  return error as ModelError;
}

describe("a chunk that is not JSON, before any output reached the caller", () => {
  const broken = [
    ["cut in half", `data: ${role}\n\ndata: {"id":"c","choices":[{"delta":{"con\n\n`],
    ["a plain-text line", `data: ${role}\n\ndata: upstream overloaded, try later\n\n`],
    ["the very first event", `data: {{{\n\n`],
    ["an HTML page in an event", `data: <html><body>502 Bad Gateway</body></html>\n\n`],
    ["a bare number followed by junk", `data: 12abc\n\n`],
    ["a truncated string", `data: "unterminated\n\n`],
  ] as const;

  it.each(broken)("%s: invalid-response, tried once, the message names a chunk that is not JSON", async (_, body) => {
    const watch = watchProcess();
    const before = server.requests.length;
    plan = [replies.sse(body), replies.sse(answer("never", null))];
    const error = await failure(client().complete({ messages: [human("hi")], tools: [] }));
    expect(error.kind).toBe("invalid-response");
    expect(error.message).toMatch(/a stream chunk is not JSON/);
    expect(error.message).not.toMatch(/connection/);
    // Not retried: the same request would get the same broken answer.
    expect(server.requests.length - before).toBe(1);
    plan = [];
    await watch.stop();
  });

  it("after output reached the caller, it is invalid-response too, and says so", async () => {
    plan = [replies.sse(`data: ${role}\n\ndata: ${JSON.stringify(chunk({ content: "Hel" }))}\n\ndata: {"choices":[{"del\n\n`)];
    const error = await failure(client().complete({ messages: [human("hi")], tools: [] }));
    expect(error.kind).toBe("invalid-response");
    expect(error.message).toMatch(/broke off after output had reached the caller/);
  });

  it("an agent run ends modelError with the invalid-response error, and its checkpoint restores", async () => {
    plan = [replies.sse(`data: ${role}\n\ndata: not json at all\n\n`)];
    const store = new MemoryCheckpointStore();
    const machine = createReactMachine({ modelClient: client(), configFile: false });
    const output = await runAgent(machine, { messages: [human("hi")], runId: "run-not-json" }, { checkpoints: store });
    expect(output.status).toBe("failed");
    expect(output.termination).toMatchObject({ reason: "modelError", error: { kind: "invalid-response" } });
    expect(() => restoreAgent(machine, store.load("run-not-json"))).not.toThrow();
  });
});

describe("streams that end early are described as what they are", () => {
  it.each([
    ["no event at all", "", /the stream ended before any chunk arrived/],
    ["only [DONE]", "data: [DONE]\n\n", /the stream ended before any chunk arrived/],
    ["a role chunk, then the end", `data: ${role}\n\n`, /the stream ended after 1 chunks without a finish_reason/],
  ] as const)("%s: the message says the stream ended, not that the server sent an error event", async (_, body, message) => {
    plan = [replies.sse(body), replies.sse(body), replies.sse(body)];
    const error = await failure(client().complete({ messages: [human("hi")], tools: [] }));
    expect(error.message).toMatch(message);
    expect(error.message).not.toMatch(/error event/);
    expect(error.attempts?.every((a) => !/error event/.test(a.message))).toBe(true);
  });

  it("a 200 answer that is not an event stream (a proxy's HTML page) is an invalid response naming its type, not retried", async () => {
    const page = { kind: "text", status: 200, headers: { "content-type": "text/html; charset=utf-8" }, body: "<html><body>Please sign in</body></html>" } as const;
    plan = [page, page, page];
    const before = server.requests.length;
    const error = await failure(client().complete({ messages: [human("hi")], tools: [] }));
    expect(error.kind).toBe("invalid-response");
    expect(error.message).toMatch(/the server answered text\/html, not an event stream/);
    expect(error.message).not.toMatch(/the stream ended/);
    expect(server.requests.length - before).toBe(1);
  });

  it("a real error event is still called one", async () => {
    plan = [replies.sse(`data: ${JSON.stringify({ error: { message: "model overloaded", code: "bad_thing" } })}\n\n`)];
    const error = await failure(client(0).complete({ messages: [human("hi")], tools: [] }));
    expect(error.message).toMatch(/error event in the stream: model overloaded/);
  });
});

describe("usage the server reports", () => {
  const hostile: [string, unknown][] = [
    ["negative counts", { prompt_tokens: -5, completion_tokens: -1, total_tokens: -6 }],
    ["fractional counts", { prompt_tokens: 2.5, completion_tokens: 0.25, total_tokens: 2.75 }],
    ["huge counts", { prompt_tokens: 1e300, completion_tokens: 9e15, total_tokens: 1e300 }],
    ["past the safe integers", { prompt_tokens: Number.MAX_SAFE_INTEGER + 2, completion_tokens: 3, total_tokens: 2 ** 60 }],
    ["a negative total with good parts", { prompt_tokens: 4, completion_tokens: 3, total_tokens: -7 }],
    ["negative zero and a huge total", { prompt_tokens: -0, completion_tokens: 1, total_tokens: 1e12 }],
  ];

  it.each(hostile)("%s: usage stays non-negative safe integers, the budget works and the checkpoint restores", async (_, usage) => {
    const events: AgentEmitted[] = [];
    const store = new MemoryCheckpointStore();
    plan = [replies.sse(answer("fine", usage))];
    const machine = createReactMachine({ modelClient: client(), configFile: false, config: { maxBudgetTokens: 1_000 } });
    const output = await runAgent(machine, { messages: [human("hi")], runId: "run-usage" }, { checkpoints: store, onEvent: (e) => events.push(e) });
    expect(output.status).toBe("succeeded");
    for (const count of Object.values(output.usage)) {
      expect(Number.isSafeInteger(count)).toBe(true);
      expect(count).toBeGreaterThanOrEqual(0);
    }
    expect(output.usage.totalTokens).toBeLessThan(1_000);
    const completed = events.find((e) => e.type === "model.call.completed");
    expect(completed && Object.values((completed as { usage: object }).usage).every((n) => Number.isSafeInteger(n) && n >= 0)).toBe(true);
    expect(() => restoreAgent(machine, store.load("run-usage"))).not.toThrow();
  });

  it.each([
    ["strings", { prompt_tokens: "12", completion_tokens: "3" }],
    ["an object", { prompt_tokens: { n: 1 } }],
    ["a list", [1, 2, 3]],
    ["a boolean", { total_tokens: true }],
  ] as [string, unknown][])("of the wrong type (%s): the response is invalid-response, not retried", async (_, usage) => {
    const before = server.requests.length;
    plan = [replies.sse(answer("fine", usage)), replies.sse(answer("fine", null))];
    const error = await failure(client().complete({ messages: [human("hi")], tools: [] }));
    expect(error.kind).toBe("invalid-response");
    expect(server.requests.length - before).toBe(1);
  });

  it("a whole (non-streamed) answer with hostile usage is cleaned the same way", async () => {
    plan = [
      replies.json({
        id: "c",
        object: "chat.completion",
        model: "hostile",
        choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }],
        usage: { prompt_tokens: -3, completion_tokens: 1.5, total_tokens: -1 },
      }),
    ];
    const turn = await resolveModelClient({ baseURL: server.baseURL, apiKey: "k-0000", model: "hostile", stream: false }).complete({ messages: [human("hi")], tools: [] });
    expect(turn.usage).toEqual({ promptTokens: 0, completionTokens: 0, totalTokens: 0 });
    expect(turn.usageMissing).toBe(true);
  });

  it("a custom model client's hostile usage cannot corrupt the run either", async () => {
    const store = new MemoryCheckpointStore();
    const machine = createReactMachine({
      configFile: false,
      // Room for the prompt (with the default system prompt): budgets that hold refuse a call whose prompt alone would cross it.
      config: { maxBudgetTokens: 2_000 },
      modelClient: {
        description: "hostile",
        complete: async () => ({ content: "ok", toolCalls: [], usage: { promptTokens: Number.NaN, completionTokens: -4, totalTokens: Infinity }, finishReason: "stop", model: "x" }),
      },
    });
    const output = await runAgent(machine, { messages: [human("hi")], runId: "run-custom" }, { checkpoints: store });
    expect(output.status).toBe("succeeded");
    expect(output.usage).toEqual({ promptTokens: 0, completionTokens: 0, totalTokens: 0 });
    expect(() => restoreAgent(machine, store.load("run-custom"))).not.toThrow();
  });

  it("a run parked after a hostile usage report persists and restores", async () => {
    const lookup = defineTool({ name: "lookup", description: "d", parameters: z.object({}), execute: () => "x" });
    const calls = toSse([
      chunk({ role: "assistant", content: "" }),
      chunk({ tool_calls: [{ index: 0, id: "c1", type: "function", function: { name: "lookup", arguments: "{}" } }] }),
      chunk({}, "tool_calls"),
      { id: "c", object: "chat.completion.chunk", choices: [], usage: { prompt_tokens: -1e308, completion_tokens: 0.1, total_tokens: 5e20 } },
    ]);
    plan = [replies.sse(calls)];
    const machine = createReactMachine({ modelClient: client(), tools: [lookup], constraints: [() => ({ decision: "pending" })], configFile: false });
    const actor = createActor(machine, { input: { messages: [human("hi")] } });
    actor.start();
    await new Promise<void>((resolve) => actor.on("guard.approval.requested", () => resolve()));
    const saved = JSON.stringify(persistAgent(actor));
    actor.stop();
    expect(() => restoreAgent(machine, saved)).not.toThrow();
  });
});
