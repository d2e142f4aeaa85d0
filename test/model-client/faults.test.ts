import { getEventListeners } from "node:events";
import { inspect } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { human } from "../../actors/messages.js";
import { ModelError, type ModelRequest } from "../../actors/model-client.js";
import { loadRecording } from "../../testing/recordings.js";
import { replies, type Reply } from "../../testing/openai-server.js";
import { bodies, caught, clientFor, closeServers, eventLog, fixture, SECRET_KEY, serve } from "./harness.js";

afterEach(closeServers);

const TEXT_STREAM = loadRecording(fixture("vercel-ai/openai/azure-model-router.1.chunks.txt")).interactions[0]!.reply;
const TEXT_JSON = loadRecording(fixture("vercel-ai/openai/openai-text.json")).interactions[0]!.reply;
const LEGACY_PARAM_400 = loadRecording(fixture("vercel-ai/openai/reasoning-model-legacy-parameter-error.json")).interactions[0]!.reply;
/** First SSE event of TEXT_STREAM carries no choices; the second opens the message with content "". */
const BEFORE_FIRST_TOKEN = 2;

const TOOL_CHOICE = { type: "function", function: { name: "lookup" } } as const;
const REQUEST: ModelRequest = {
  messages: [human("What is the capital of Denmark?")],
  tools: [{ type: "function", function: { name: "lookup", description: "Look a fact up.", parameters: { type: "object", properties: {} } } }],
  toolChoice: TOOL_CHOICE,
};

/** Replies in order, then the last one forever. */
function sequence(...sequenceReplies: Reply[]) {
  let next = 0;
  return () => sequenceReplies[Math.min(next++, sequenceReplies.length - 1)] as Reply;
}

/** A sleep that records what it was asked to wait and returns at once. */
function recordingSleep() {
  const waits: number[] = [];
  return {
    waits,
    sleep: async (ms: number) => {
      waits.push(ms);
    },
  };
}

describe("retries", () => {
  it("honours retry-after on a 429 (seconds), then succeeds", async () => {
    const server = await serve(sequence(replies.rateLimited({ seconds: 2 }), TEXT_STREAM));
    const { waits, sleep } = recordingSleep();
    const log = eventLog();
    const client = clientFor(server, { sleep, resilience: { initialDelayMs: 10, maxDelayMs: 5_000, jitter: 0 } });
    const turn = await client.complete(REQUEST, { onEvent: log.onEvent });
    expect(turn.content).toBe("Capital of Denmark.");
    expect(waits).toEqual([2_000]);
    expect(log.ofType("model.call.failed")).toMatchObject([
      { attempt: 1, status: 429, kind: "http", code: "rate_limit_exceeded", willRetry: true, next: "retry" },
    ]);
    expect(server.requests).toHaveLength(2);
  });

  it("really waits for retry-after-ms before the next attempt", async () => {
    const server = await serve(sequence(replies.rateLimited({ ms: 150 }), TEXT_STREAM));
    const client = clientFor(server, { resilience: { initialDelayMs: 1, maxDelayMs: 5_000, jitter: 0 } });
    await client.complete(REQUEST);
    const [first, second] = server.requests;
    expect(second!.receivedAt - first!.receivedAt).toBeGreaterThanOrEqual(140);
  });

  it("moves to the fallback instead of waiting longer than maxDelayMs", async () => {
    const primary = await serve(() => replies.rateLimited({ seconds: 60 }));
    const fallback = await serve(() => TEXT_STREAM);
    const { waits, sleep } = recordingSleep();
    const log = eventLog();
    const client = clientFor(primary, { sleep, fallbacks: [{ baseURL: fallback.baseURL, apiKey: "sk-fallback-key-123456" }] });
    await client.complete(REQUEST, { onEvent: log.onEvent });
    expect(waits).toEqual([]);
    expect(primary.requests).toHaveLength(1);
    expect(log.ofType("model.call.failed")[0]).toMatchObject({ status: 429, next: "fallback", willRetry: true });
  });

  it("retries a 500 with exponential backoff and succeeds, emitting attempt numbers", async () => {
    const server = await serve(sequence(replies.error(500, "boom"), replies.error(503, "overloaded"), TEXT_STREAM));
    const { waits, sleep } = recordingSleep();
    const log = eventLog();
    const client = clientFor(server, { sleep, resilience: { initialDelayMs: 100, backoffMultiplier: 3, jitter: 0 } });
    const turn = await client.complete(REQUEST, { onEvent: log.onEvent });
    expect(turn.content).toBe("Capital of Denmark.");
    expect(waits).toEqual([100, 300]);
    expect(log.events.filter((e) => e.type !== "text.delta")).toMatchObject([
      { type: "model.call.started", attempt: 1, model: "test-model", endpoint: server.baseURL },
      { type: "model.call.failed", attempt: 1, status: 500, message: "boom", willRetry: true, next: "retry" },
      { type: "model.call.started", attempt: 2 },
      { type: "model.call.failed", attempt: 2, status: 503, message: "overloaded", willRetry: true },
      { type: "model.call.started", attempt: 3 },
      {
        type: "model.call.completed",
        attempt: 3,
        model: "test-model",
        endpoint: server.baseURL,
        usage: { promptTokens: 15, completionTokens: 78, totalTokens: 93 },
        finishReason: "stop",
      },
    ]);
    // Every attempt sends the very same body, toolChoice included.
    const sent = bodies(server);
    expect(sent).toHaveLength(3);
    for (const body of sent) expect(body).toEqual(sent[0]);
    expect(sent[0]!["tool_choice"]).toEqual(TOOL_CHOICE);
  });

  it("randomizes the jitter fraction of the delay", async () => {
    const server = await serve(sequence(replies.error(500, "boom"), TEXT_STREAM));
    const { waits, sleep } = recordingSleep();
    const client = clientFor(server, { sleep, random: () => 0.5, resilience: { initialDelayMs: 200, jitter: 0.5 } });
    await client.complete(REQUEST);
    // 200 * (1 - 0.5) + 200 * 0.5 * 0.5
    expect(waits).toEqual([150]);
  });

  it("gives up after maxRetries and says how often it tried", async () => {
    const server = await serve(() => replies.error(502, "bad gateway"));
    const client = clientFor(server, { resilience: { maxRetries: 3, initialDelayMs: 1, jitter: 0 } });
    const error = (await caught(() => client.complete(REQUEST))) as ModelError;
    expect(error).toBeInstanceOf(ModelError);
    expect(error.status).toBe(502);
    expect(error.retryable).toBe(true);
    expect(error.message).toBe(`model call failed: ${server.baseURL} (model test-model): HTTP 502: bad gateway (after 4 attempts)`);
    expect(server.requests).toHaveLength(4);
    expect(error.attempts?.map((a) => a.attempt)).toEqual([1, 2, 3, 4]);
  });

  it("does not retry a 4xx other than 429", async () => {
    const server = await serve(() => replies.error(404, "The model `nope` does not exist", { code: "model_not_found" }));
    const log = eventLog();
    const error = (await caught(() => clientFor(server).complete(REQUEST, { onEvent: log.onEvent }))) as ModelError;
    expect(error.status).toBe(404);
    expect(error.code).toBe("model_not_found");
    expect(error.retryable).toBe(false);
    expect(server.requests).toHaveLength(1);
    expect(log.ofType("model.call.failed")).toMatchObject([{ willRetry: false, next: "none" }]);
  });

  it("retries only the failures listed in retryOn", async () => {
    const server = await serve(sequence(replies.error(500, "boom"), TEXT_STREAM));
    const client = clientFor(server, { resilience: { retryOn: ["rate_limit"] } });
    expect(((await caught(() => client.complete(REQUEST))) as ModelError).status).toBe(500);
    expect(server.requests).toHaveLength(1);
  });

  it("retries a non-JSON 502 page from a proxy", async () => {
    const server = await serve(sequence({ kind: "text", status: 502, headers: { "content-type": "text/html" }, body: "<h1>502 Bad Gateway</h1>" }, TEXT_JSON));
    const turn = await clientFor(server, { stream: false }).complete(REQUEST);
    expect(turn.finishReason).toBe("stop");
    expect(server.requests).toHaveLength(2);
  });
});

describe("dropped connections and truncated streams", () => {
  it("retries when the socket is destroyed before any byte", async () => {
    const server = await serve(sequence(replies.destroy(), TEXT_STREAM));
    const log = eventLog();
    const turn = await clientFor(server).complete(REQUEST, { onEvent: log.onEvent });
    expect(turn.content).toBe("Capital of Denmark.");
    expect(log.ofType("model.call.failed")).toMatchObject([{ attempt: 1, kind: "connection", next: "retry" }]);
    expect(await server.outcome(0)).toBe("destroyed");
  });

  it("retries a stream dropped mid-way before the first token reached the caller", async () => {
    const cut: Reply = { ...(TEXT_STREAM as Extract<Reply, { kind: "sse" }>), cut: { afterEvents: BEFORE_FIRST_TOKEN, then: "destroy" } };
    const server = await serve(sequence(cut, TEXT_STREAM));
    const log = eventLog();
    const turn = await clientFor(server).complete(REQUEST, { onEvent: log.onEvent });
    expect(turn.content).toBe("Capital of Denmark.");
    // The text arrived once, from the second attempt only.
    expect(log.ofType("text.delta").map((e) => e.delta)).toEqual(["Capital", " of", " Denmark", "."]);
    expect(log.ofType("model.call.failed")).toMatchObject([{ attempt: 1, kind: "connection", willRetry: true }]);
    expect(server.requests).toHaveLength(2);
  });

  it("retries a stream cut in the middle of an event (after N bytes)", async () => {
    const cut: Reply = { ...(TEXT_STREAM as Extract<Reply, { kind: "sse" }>), cut: { afterBytes: 700, then: "destroy" } };
    const server = await serve(sequence(cut, TEXT_STREAM));
    expect((await clientFor(server).complete(REQUEST)).content).toBe("Capital of Denmark.");
    expect(server.requests).toHaveLength(2);
  });

  it("fails, without retry or fallback, when the stream drops after text reached the caller", async () => {
    const cut: Reply = { ...(TEXT_STREAM as Extract<Reply, { kind: "sse" }>), cut: { afterEvents: 4, then: "destroy" } };
    const primary = await serve(() => cut);
    const fallback = await serve(() => TEXT_STREAM);
    const log = eventLog();
    const client = clientFor(primary, { fallbacks: [{ baseURL: fallback.baseURL, model: "other-model" }] });
    const error = (await caught(() => client.complete(REQUEST, { onEvent: log.onEvent }))) as ModelError;
    expect(error).toBeInstanceOf(ModelError);
    expect(error.kind).toBe("connection");
    expect(error.message).toContain("after output had reached the caller, so it was not retried");
    expect(log.ofType("text.delta").map((e) => e.delta)).toEqual(["Capital", " of"]);
    expect(log.ofType("model.call.failed")).toMatchObject([{ willRetry: false, next: "none" }]);
    expect(primary.requests).toHaveLength(1);
    expect(fallback.requests).toHaveLength(0);
  });

  it("treats a body that ends cleanly without a finish_reason as cut off, and retries it", async () => {
    const cut: Reply = { ...(TEXT_STREAM as Extract<Reply, { kind: "sse" }>), cut: { afterEvents: BEFORE_FIRST_TOKEN, then: "end" } };
    const server = await serve(sequence(cut, TEXT_STREAM));
    const log = eventLog();
    await clientFor(server).complete(REQUEST, { onEvent: log.onEvent });
    expect(log.ofType("model.call.failed")).toMatchObject([{ kind: "stream", message: expect.stringContaining("without a finish_reason") }]);
  });
});

describe("timeouts", () => {
  it("retries a response that hangs past the timeout, then succeeds", async () => {
    const server = await serve(sequence(replies.hang(), TEXT_STREAM));
    const log = eventLog();
    const started = performance.now();
    const turn = await clientFor(server).complete({ ...REQUEST, timeoutMs: 200 }, { onEvent: log.onEvent });
    expect(turn.content).toBe("Capital of Denmark.");
    expect(performance.now() - started).toBeGreaterThanOrEqual(190);
    expect(log.ofType("model.call.failed")).toMatchObject([
      { attempt: 1, kind: "timeout", message: "no complete answer within 200 ms", next: "retry" },
    ]);
    // The hung request was cancelled, not left open.
    expect(await server.outcome(0)).toBe("client-closed");
  });

  it("times out a stream that stalls after its first events (the limit covers the whole body)", async () => {
    const stall: Reply = { ...(TEXT_STREAM as Extract<Reply, { kind: "sse" }>), cut: { afterEvents: BEFORE_FIRST_TOKEN, then: "hang" } };
    const server = await serve(sequence(stall, TEXT_STREAM));
    const log = eventLog();
    await clientFor(server).complete({ ...REQUEST, timeoutMs: 150 }, { onEvent: log.onEvent });
    expect(log.ofType("model.call.failed")).toMatchObject([{ kind: "timeout" }]);
    expect(await server.outcome(0)).toBe("client-closed");
  });

  it("fails with kind timeout when every attempt hangs", async () => {
    const server = await serve(() => replies.hang());
    const error = (await caught(() => clientFor(server, { resilience: { maxRetries: 1 } }).complete({ ...REQUEST, timeoutMs: 100 }))) as ModelError;
    expect(error.kind).toBe("timeout");
    expect(error.message).toBe(`model call failed: ${server.baseURL} (model test-model): no complete answer within 100 ms (after 2 attempts)`);
    expect(server.requests).toHaveLength(2);
  });
});

describe("fallbacks", () => {
  it("sends a 400 straight to the fallback, without retrying it", async () => {
    const primary = await serve(() => LEGACY_PARAM_400);
    const fallback = await serve(() => TEXT_STREAM);
    const { waits, sleep } = recordingSleep();
    const log = eventLog();
    const client = clientFor(primary, {
      sleep,
      model: "o3-mini",
      fallbacks: [{ baseURL: fallback.baseURL, model: "gpt-4o-mini", apiKey: "sk-fallback-key-abcdef" }],
    });
    const turn = await client.complete({ ...REQUEST, maxTokens: 50 }, { onEvent: log.onEvent });
    expect(turn.model).toBe("gpt-4o-mini");
    expect(turn.content).toBe("Capital of Denmark.");
    expect(waits).toEqual([]);
    expect(primary.requests).toHaveLength(1);
    expect(log.events.filter((e) => e.type !== "text.delta")).toMatchObject([
      { type: "model.call.started", attempt: 1, model: "o3-mini", endpoint: primary.baseURL },
      { type: "model.call.failed", attempt: 1, status: 400, code: "unsupported_parameter", next: "fallback", willRetry: true },
      { type: "model.call.started", attempt: 2, model: "gpt-4o-mini", endpoint: fallback.baseURL },
      { type: "model.call.completed", attempt: 2, model: "gpt-4o-mini" },
    ]);
    // Same request, other model; each endpoint got its own key, never the other's.
    const [first] = bodies(primary);
    const [second] = bodies(fallback);
    expect({ ...second, model: "o3-mini" }).toEqual(first);
    expect(second!["tool_choice"]).toEqual(TOOL_CHOICE);
    expect(primary.requests[0]!.headers.authorization).toBe(`Bearer ${SECRET_KEY}`);
    expect(fallback.requests[0]!.headers.authorization).toBe("Bearer sk-fallback-key-abcdef");
  });

  it("reads a fallback key from the variable named by apiKeyEnv; never sends the primary key to another host", async () => {
    const primary = await serve(() => replies.error(400, "no"));
    const keyed = await serve(() => replies.error(400, "no either"));
    const keyless = await serve(() => TEXT_STREAM);
    const client = clientFor(primary, {
      env: { BACKUP_KEY: "sk-from-env-999999" },
      fallbacks: [{ baseURL: keyed.baseURL, apiKeyEnv: "BACKUP_KEY" }, { baseURL: keyless.baseURL }],
    });
    await client.complete(REQUEST);
    expect(keyed.requests[0]!.headers.authorization).toBe("Bearer sk-from-env-999999");
    expect(keyless.requests[0]!.headers.authorization).not.toContain(SECRET_KEY);
  });

  it("a model-only fallback uses the primary endpoint and key", async () => {
    const server = await serve(sequence(replies.error(404, "no such model"), TEXT_STREAM));
    const client = clientFor(server, { fallbacks: [{ model: "backup-model" }] });
    const turn = await client.complete(REQUEST);
    expect(turn.model).toBe("backup-model");
    expect(bodies(server).map((b) => b["model"])).toEqual(["test-model", "backup-model"]);
    expect(server.requests[1]!.headers.authorization).toBe(`Bearer ${SECRET_KEY}`);
  });

  it("keeps toolChoice in every retry and fallback attempt", async () => {
    const primary = await serve(() => replies.error(500, "down"));
    const fallback = await serve(sequence(replies.rateLimited({ ms: 1 }), TEXT_STREAM));
    const client = clientFor(primary, { fallbacks: [{ baseURL: fallback.baseURL, model: "m2" }] });
    await client.complete(REQUEST);
    const sent = [...bodies(primary), ...bodies(fallback)];
    expect(sent).toHaveLength(5);
    for (const body of sent) expect(body["tool_choice"]).toEqual(TOOL_CHOICE);
  });

  it("when every endpoint fails, the error lists each one", async () => {
    const primary = await serve(() => replies.error(500, "primary down"));
    const second = await serve(() => LEGACY_PARAM_400);
    const third = await serve(() => replies.destroy());
    const log = eventLog();
    const client = clientFor(primary, {
      resilience: { maxRetries: 1, initialDelayMs: 1, jitter: 0 },
      fallbacks: [
        { baseURL: second.baseURL, model: "second-model" },
        { baseURL: third.baseURL, model: "third-model" },
      ],
    });
    const error = (await caught(() => client.complete(REQUEST, { onEvent: log.onEvent }))) as ModelError;
    expect(error).toBeInstanceOf(ModelError);
    expect(error.message).toMatch(/^model call failed on all 3 endpoints: /);
    expect(error.message).toContain(`1) ${primary.baseURL} (model test-model): HTTP 500: primary down (after 2 attempts)`);
    expect(error.message).toContain(`2) ${second.baseURL} (model second-model): HTTP 400: Unsupported parameter: 'max_tokens'`);
    expect(error.message).toContain(`3) ${third.baseURL} (model third-model): connection failed`);
    expect(error.kind).toBe("connection");
    expect(error.endpoint).toBe(third.baseURL);
    expect(error.attempts?.map((a) => [a.attempt, a.model, a.status])).toEqual([
      [1, "test-model", 500],
      [2, "test-model", 500],
      [3, "second-model", 400],
      [4, "third-model", undefined],
      [5, "third-model", undefined],
    ]);
    expect(log.ofType("model.call.failed").map((e) => e.next)).toEqual(["retry", "fallback", "fallback", "retry", "none"]);
  });

  it("config.resilience on the request replaces the client's retries and fallbacks", async () => {
    const primary = await serve(() => replies.error(500, "down"));
    const fallback = await serve(() => TEXT_STREAM);
    const client = clientFor(primary, { resilience: { maxRetries: 5, initialDelayMs: 1 } });
    const turn = await client.complete({
      ...REQUEST,
      resilience: {
        maxRetries: 0,
        initialDelayMs: 1,
        maxDelayMs: 10,
        backoffMultiplier: 2,
        jitter: 0,
        retryOn: ["server_error"],
        fallbacks: [{ baseURL: fallback.baseURL, model: "from-config" }],
      },
    });
    expect(primary.requests).toHaveLength(1);
    expect(turn.model).toBe("from-config");
  });
});

describe("cancellation", () => {
  it("the caller's signal cancels the in-flight HTTP request at once, and is not retried", async () => {
    const server = await serve(() => replies.hang());
    const controller = new AbortController();
    const log = eventLog();
    const pending = clientFor(server).complete(REQUEST, { signal: controller.signal, onEvent: log.onEvent });
    await waitFor(() => server.requests.length === 1);
    controller.abort();
    const error = (await caught(() => pending)) as ModelError;
    expect(error.kind).toBe("aborted");
    expect(await server.outcome(0)).toBe("client-closed");
    expect(server.requests).toHaveLength(1);
    expect(log.ofType("model.call.failed")).toMatchObject([{ kind: "aborted", willRetry: false, next: "none" }]);
    // Our listener on the caller's (long-lived) signal is gone again.
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
  });

  it("cancels a stream mid-way", async () => {
    const slow: Reply = { ...(TEXT_STREAM as Extract<Reply, { kind: "sse" }>), delayMs: 200 };
    const server = await serve(() => slow);
    const controller = new AbortController();
    const log = eventLog();
    const pending = clientFor(server).complete(REQUEST, {
      signal: controller.signal,
      onEvent: (event) => {
        log.onEvent(event);
        if (event.type === "text.delta") controller.abort();
      },
    });
    expect(((await caught(() => pending)) as ModelError).kind).toBe("aborted");
    expect(await server.outcome(0)).toBe("client-closed");
    expect(log.ofType("text.delta")).toHaveLength(1);
  });

  it("cancels the wait between retries", async () => {
    const server = await serve(() => replies.error(500, "down"));
    const controller = new AbortController();
    const client = clientFor(server, { resilience: { initialDelayMs: 10_000, maxDelayMs: 10_000 } });
    const started = performance.now();
    const pending = client.complete(REQUEST, { signal: controller.signal });
    await waitFor(() => server.requests.length === 1);
    setTimeout(() => controller.abort(), 30);
    expect(((await caught(() => pending)) as ModelError).kind).toBe("aborted");
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(server.requests).toHaveLength(1);
  });

  it("a signal aborted before the call sends nothing", async () => {
    const server = await serve(() => TEXT_STREAM);
    const error = (await caught(() => clientFor(server).complete(REQUEST, { signal: AbortSignal.abort() }))) as ModelError;
    expect(error.kind).toBe("aborted");
    expect(server.requests).toHaveLength(0);
  });

  it("leaves no listener on a long-lived signal after many calls", async () => {
    const server = await serve(() => TEXT_STREAM);
    const controller = new AbortController();
    const client = clientFor(server);
    for (let i = 0; i < 5; i++) await client.complete(REQUEST, { signal: controller.signal });
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
  });
});

describe("secrets", () => {
  it("never puts the API key in errors or events, even when the server echoes it", async () => {
    const server = await serve(() =>
      replies.error(401, `Incorrect API key provided: ${SECRET_KEY}. Header was Bearer ${SECRET_KEY}`, { code: "invalid_api_key" }),
    );
    const log = eventLog();
    const fallbackKey = "sk-second-secret-0000000000";
    const client = clientFor(server, { fallbacks: [{ model: "m2", apiKey: fallbackKey }] });
    const error = (await caught(() => client.complete(REQUEST, { onEvent: log.onEvent }))) as ModelError;
    expect(error.status).toBe(401);
    expect(error.message).toContain("Incorrect API key provided: [redacted]");
    const everything = [error.message, inspect(error, { depth: null }), JSON.stringify(error), JSON.stringify(log.events), client.description].join("\n");
    expect(everything).not.toContain(SECRET_KEY);
    expect(everything).not.toContain(fallbackKey);
    expect(everything).not.toContain(SECRET_KEY.slice(8));
  });

  it("shows endpoints without query strings, whose values are redacted too", async () => {
    const server = await serve(() => replies.error(400, "bad sk-in-query-123456"));
    const log = eventLog();
    const client = clientFor(server, { baseURL: `${server.baseURL}?key=sk-in-query-123456` });
    const error = (await caught(() => client.complete(REQUEST, { onEvent: log.onEvent }))) as ModelError;
    expect(error.endpoint).toBe(server.baseURL);
    expect(JSON.stringify(log.events) + inspect(error, { depth: null }) + client.description).not.toContain("sk-in-query");
  });
});

async function waitFor(condition: () => boolean, timeoutMs = 2_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
