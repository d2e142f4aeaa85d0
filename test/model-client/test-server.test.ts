import { Agent, request as httpRequest } from "node:http";
import type { Socket } from "node:net";
import { afterEach, describe, expect, it, vi } from "vitest";
import { startOpenAIServer, replies, splitEvents, toSse, type OpenAIServer } from "../../testing/openai-server.js";
import { formatOf, loadRecording, replayRecording } from "../../testing/recordings.js";
import { fixture } from "./harness.js";

const opened: OpenAIServer[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((server) => server.close()));
});

async function start(respond: Parameters<typeof startOpenAIServer>[0]["respond"]) {
  const server = await startOpenAIServer({ respond });
  opened.push(server);
  return server;
}

describe("the OpenAI-compatible test server", () => {
  it("records requests and answers JSON", async () => {
    const server = await start(({ index }) => replies.json({ n: index }, 201, { "x-test": "yes" }));
    const response = await fetch(`${server.baseURL}/chat/completions`, { method: "POST", body: JSON.stringify({ a: 1 }), headers: { "content-type": "application/json" } });
    expect(response.status).toBe(201);
    expect(response.headers.get("x-test")).toBe("yes");
    expect(await response.json()).toEqual({ n: 0 });
    expect(server.requests[0]).toMatchObject({ index: 0, method: "POST", path: "/v1/chat/completions", body: { a: 1 } });
    expect(await server.outcome(0)).toBe("completed");
  });

  it("closes kept-alive connections with no request in flight, and only those", async () => {
    const server = await start(({ path }) => (path.endsWith("/hang") ? replies.hang() : replies.json({ ok: true })));
    const agent = new Agent({ keepAlive: true });
    const get = (path: string) =>
      new Promise<{ socket: Socket }>((resolve, reject) => {
        const request = httpRequest(`${server.baseURL}${path}`, { agent }, (response) => {
          response.resume();
          response.on("end", () => resolve({ socket: request.socket! }));
        });
        request.on("error", reject);
        request.end();
      });
    const { socket: idle } = await get("/idle");
    const idleClosed = new Promise<void>((resolve) => idle.once("close", () => resolve()));
    // A second connection, busy with a request the server holds.
    const busy = httpRequest(`${server.baseURL}/hang`, { agent: new Agent({ keepAlive: true }) });
    busy.on("error", () => undefined);
    busy.end();
    await vi.waitFor(() => expect(server.requests).toHaveLength(2));
    let busyClosed = false;
    busy.socket?.once("close", () => (busyClosed = true));
    server.closeIdleConnections();
    await idleClosed;
    expect(busyClosed).toBe(false);
    expect(busy.socket?.destroyed).toBe(false);
    agent.destroy();
  });

  it("streams SSE event by event with a delay", async () => {
    const body = toSse([{ a: 1 }, { b: 2 }]);
    const server = await start(() => replies.sse(body, { delayMs: 30 }));
    const started = performance.now();
    const text = await (await fetch(server.baseURL)).text();
    expect(text).toBe(body);
    expect(performance.now() - started).toBeGreaterThanOrEqual(55);
  });

  it("pauses only where a delay function asks, and sends the unpaused events after it in one write", async () => {
    const body = toSse([{ a: 1 }, { b: 2 }, { c: 3 }, { d: 4 }]);
    const server = await start(() => replies.sse(body, { delayMs: (event) => (event === 2 ? 60 : 0) }));
    // Taken before the request is sent: the server's pause starts after it, so the event after the
    // pause cannot arrive sooner than the pause from here, however late this process reads (a gap
    // between two reads is no such bound: a slow first read shortens it).
    const requested = performance.now();
    const response = await fetch(server.baseURL);
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    const reads: { text: string; at: number }[] = [];
    for (let read = await reader.read(); !read.done; read = await reader.read()) reads.push({ text: decoder.decode(read.value), at: performance.now() - requested });
    expect(reads.map((r) => r.text).join("")).toBe(body);
    // The first two events, then (after the pause) the other three, [DONE] included, in one piece.
    const paused = reads.findIndex((r) => r.text.startsWith('data: {"c":3}'));
    expect(paused).toBeGreaterThan(0);
    expect(reads.slice(0, paused).map((r) => r.text).join("")).toBe(splitEvents(body).slice(0, 2).join(""));
    expect(reads.slice(paused).map((r) => r.text)).toEqual([splitEvents(body).slice(2).join("")]);
    // Timers may fire a millisecond early by this clock: 60 ms asked, 55 required.
    expect(reads[paused]!.at).toBeGreaterThanOrEqual(55);
  });

  it("turns a throwing respond into a 500 that says so", async () => {
    const server = await start(() => {
      throw new Error("oops");
    });
    const response = await fetch(server.baseURL);
    expect(response.status).toBe(500);
    expect(await response.text()).toContain("respond() threw: oops");
  });

  it("close() ends hanging requests and leaves no socket open", async () => {
    const server = await start(() => replies.hang());
    const pending = fetch(server.baseURL).catch((error: unknown) => error);
    while (server.requests.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    await server.close();
    opened.splice(0);
    expect(await server.outcome(0)).toBe("server-closed");
    expect(await pending).toBeInstanceOf(Error);
  });

  it("splits SSE bodies so the pieces re-join exactly", () => {
    const body = ": comment\n\ndata: {}\n\nevent: error\ndata: {}\n\ndata: [DONE]\n\n";
    expect(splitEvents(body)).toEqual([": comment\n\n", "data: {}\n\n", "event: error\ndata: {}\n\n", "data: [DONE]\n\n"]);
    expect(splitEvents(body).join("")).toBe(body);
  });
});

describe("recordings", () => {
  it("knows the five formats", () => {
    expect(["a.chunks.txt", "a.sse", "a.bin", "a.json", "a.yaml"].map(formatOf)).toEqual(["chunks", "sse", "bin", "json", "cassette"]);
    expect(() => formatOf("a.txt")).toThrow(/not a known recording format/);
  });

  it("wraps chunk lines as SSE ending in [DONE]", () => {
    const { interactions } = loadRecording(fixture("vercel-ai/groq/groq-tool-call.chunks.txt"));
    const reply = interactions[0]!.reply;
    expect(reply.kind).toBe("sse");
    if (reply.kind !== "sse") return;
    expect(splitEvents(reply.body)).toHaveLength(4);
    expect(reply.body.endsWith("data: [DONE]\n\n")).toBe(true);
    expect(reply.body.startsWith('data: {"id":"chatcmpl-b610d559')).toBe(true);
  });

  it("reads a cassette's statuses, content types and request bodies", () => {
    const { format, interactions } = loadRecording(fixture("pydantic-ai/test_groq/test_tool_use_failed_error.yaml"));
    expect(format).toBe("cassette");
    expect(interactions.map((i) => [i.reply.kind, "status" in i.reply ? i.reply.status : undefined, i.stream])).toEqual([
      ["json", 400, false],
      ["json", 200, false],
      ["json", 200, false],
    ]);
    expect(interactions[0]!.request?.["model"]).toBe("openai/gpt-oss-120b");
    const streamed = loadRecording(fixture("pydantic-ai/test_openrouter/test_openrouter_stream_error.yaml")).interactions[0]!;
    expect(streamed.stream).toBe(true);
    expect(streamed.reply).toMatchObject({ kind: "sse", headers: { "content-type": "text/event-stream" } });
  });

  it("gives an error body status 400 unless told otherwise", () => {
    const path = fixture("vercel-ai/openai/reasoning-model-legacy-parameter-error.json");
    expect(loadRecording(path).interactions[0]!.reply).toMatchObject({ kind: "json", status: 400 });
    expect(loadRecording(path, { status: 422 }).interactions[0]!.reply).toMatchObject({ status: 422 });
  });

  it("replays interactions in order, then answers 500", async () => {
    const server = await start(replayRecording(fixture("pydantic-ai/test_openai/test_compatible_api_with_tool_calls_without_id.yaml")));
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await fetch(`${server.baseURL}/chat/completions`, { method: "POST" })).status);
    expect(statuses).toEqual([200, 200, 500]);
  });

  it("refuses a request to the other API's path with a 404 that names both (and moves on to the next interaction)", async () => {
    const server = await start(replayRecording(fixture("pydantic-ai/test_openai_responses/test_openai_responses_stream.yaml")));
    const wrong = await fetch(`${server.baseURL}/chat/completions`, { method: "POST" });
    expect(wrong.status).toBe(404);
    expect(((await wrong.json()) as { error: { message: string } }).error.message).toBe(
      "test server: the recording answers POST /responses (the Responses API); the request went to /v1/chat/completions",
    );
    const right = await fetch(`${server.baseURL}/responses`, { method: "POST" });
    expect(right.status).toBe(200);
    expect(right.headers.get("content-type")).toMatch(/^text\/event-stream/);
    expect(await right.text()).toMatch(/^event: response\.created\ndata: \{"type":"response\.created"/);
  });
});
