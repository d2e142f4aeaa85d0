import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { createReactMachine, ModelClient } from "../../index.js";
import { agentHandler, toNodeListener, ErrorBodySchema, RunSnapshotSchema, type AgentHandler, type AgentHandlerOptions } from "../../http.js";
import { MemoryCheckpointStore } from "../../machines/persistence/checkpoints/memory-store.js";
import { startOpenAIServer, textTurn, type OpenAIServer } from "../../testing.js";

/**
 * The in-process handler's memory stays bounded: thousands of short runs through agentHandler (the
 * real openai client against the loopback model server), and the finished runs it holds never pass
 * `maxFinishedRuns`. Counted as entries (handler.held()), never as heap or time.
 */

let model: OpenAIServer | undefined;
let handler: AgentHandler | undefined;
afterEach(async () => {
  await handler?.close();
  await model?.close();
  handler = undefined;
  model = undefined;
});

async function start(options: Omit<AgentHandlerOptions, "agents">): Promise<AgentHandler> {
  model = await startOpenAIServer({ respond: () => textTurn("done"), keepRequests: false });
  const agent = createReactMachine({ name: "Short", modelClient: ModelClient.resolve({ baseURL: model.baseURL, apiKey: "test", model: "gpt-4o-mini" }), configFile: false });
  handler = agentHandler({ agents: { short: agent }, ...options });
  return handler;
}

/** Start a run and read its stream to the end; resolves with its id. */
async function runToEnd(h: AgentHandler, message: string): Promise<string> {
  const response = await h(new Request("http://app.local/runs", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ agent: "short", message }) }));
  expect(response.status).toBe(200);
  const body = await response.text();
  expect(body).toContain("event: run.finished");
  return response.headers.get("x-run-id")!;
}

async function push(h: AgentHandler, count: number, cap: number): Promise<string[]> {
  const ids: string[] = [];
  let most = 0;
  const lanes = Array.from({ length: 16 }, async (_, lane) => {
    for (let i = lane; i < count; i += 16) {
      ids[i] = await runToEnd(h, `task ${i}`);
      most = Math.max(most, h.held().finished);
    }
  });
  await Promise.all(lanes);
  expect(most).toBeGreaterThan(0);
  expect(most).toBeLessThanOrEqual(cap);
  return ids;
}

const get = (h: AgentHandler, runId: string) => h(new Request(`http://app.local/runs/${runId}`));

describe("finished runs held in memory are capped (maxFinishedRuns)", () => {
  it("without a store: 1,500 runs, never more than the cap held; an evicted run answers 410 run_expired, an unknown one 404", async () => {
    const h = await start({ store: false, maxFinishedRuns: 25 });
    const ids = await push(h, 1_500, 25);
    expect(h.held()).toEqual({ live: 0, finished: 25 });

    const evicted = await get(h, ids[1_000]!);
    expect(evicted.status).toBe(410);
    const body = ErrorBodySchema.parse(await evicted.json());
    expect(body.error.code).toBe("run_expired");
    expect(body.error.message).toMatch(/maxFinishedRuns/);
    const stream = await h(new Request(`http://app.local/runs/${ids[1_001]}/stream`));
    expect(stream.status).toBe(410);
    // The ids of expired runs are remembered in a bounded set too (the last 1,000): older ones are unknown.
    expect(ErrorBodySchema.parse(await (await get(h, ids[0]!)).json()).error.code).toBe("unknown_run");

    const recent = await get(h, ids.at(-1)!);
    expect(recent.status).toBe(200);
    expect(RunSnapshotSchema.parse(await recent.json()).status).toBe("succeeded");
    const never = ErrorBodySchema.parse(await (await get(h, "never-started")).json());
    expect(never.error.code).toBe("unknown_run");
  }, 120_000);

  it("with a checkpoint store: an evicted run is answered from its final checkpoint", async () => {
    const store = new MemoryCheckpointStore();
    const h = await start({ store, maxFinishedRuns: 10 });
    const ids = await push(h, 300, 10);
    expect(h.held().finished).toBe(10);
    const evicted = await get(h, ids[0]!);
    expect(evicted.status).toBe(200);
    expect(RunSnapshotSchema.parse(await evicted.json())).toMatchObject({ runId: ids[0], status: "succeeded" });
    // Read from the store, not held again.
    expect(h.held().finished).toBe(10);
  }, 60_000);

  it("with a store's keepFinishedMs: the handler prunes finished runs from the store as they age; one gone from both answers 410", async () => {
    const store = new MemoryCheckpointStore({ keepFinishedMs: 100 });
    const h = await start({ store, maxFinishedRuns: 1 });
    const ids = await push(h, 5, 1);
    expect(store.list().length).toBeGreaterThan(0);
    const started = Date.now();
    while (store.list().length > 0 && Date.now() - started < 10_000) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(store.list()).toEqual([]);
    const gone = await get(h, ids[0]!);
    expect(gone.status).toBe(410);
    expect(ErrorBodySchema.parse(await gone.json()).error.code).toBe("run_expired");
    expect(() => new MemoryCheckpointStore({ keepFinishedMs: -1 })).toThrow(/keepFinishedMs must be a positive integer/);
  });

  it("retainFinishedMs still lets a finished run go by time", async () => {
    const h = await start({ store: false, retainFinishedMs: 50 });
    const id = await runToEnd(h, "one");
    expect(h.held().finished).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 120));
    expect(h.held().finished).toBe(0);
    expect((await get(h, id)).status).toBe(410);
  });
});

describe("rateLimit: an optional budget of requests per client", () => {
  const ask = (h: AgentHandler, who?: string) => h(new Request("http://app.local/runs/nothing-here", who ? { headers: { "x-user": who } } : {}));

  it("is off by default: a burst of requests is answered as usual", async () => {
    const h = await start({ store: false });
    const answers = await Promise.all(Array.from({ length: 200 }, () => ask(h)));
    expect(new Set(answers.map((r) => r.status))).toEqual(new Set([404]));
  });

  it("past max in a window: 429 rate_limited with Retry-After; other clients keep their budget; a new window starts afresh", async () => {
    const h = await start({ store: false, rateLimit: { windowMs: 300, max: 3, key: (request) => request.headers.get("x-user") ?? "anonymous" } });
    for (let i = 0; i < 3; i++) expect((await ask(h, "alice")).status).toBe(404);
    const limited = await ask(h, "alice");
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get("retry-after"))).toBe(1);
    const body = ErrorBodySchema.parse(await limited.json());
    expect(body.error).toMatchObject({ code: "rate_limited", message: expect.stringMatching(/at most 3 every 300 ms/) });
    // A start is refused before its body is read: no run is made.
    const refused = await h(new Request("http://app.local/runs", { method: "POST", headers: { "content-type": "application/json", "x-user": "alice" }, body: JSON.stringify({ agent: "short", message: "hi" }) }));
    expect(refused.status).toBe(429);
    expect(h.held()).toEqual({ live: 0, finished: 0 });
    expect((await ask(h, "bob")).status).toBe(404);
    await new Promise((resolve) => setTimeout(resolve, 350));
    expect((await ask(h, "alice")).status).toBe(404);
  });

  it("counts at most maxClients clients: past it the oldest window is forgotten", async () => {
    const h = await start({ store: false, rateLimit: { windowMs: 60_000, max: 1, maxClients: 2, key: (request) => request.headers.get("x-user")! } });
    expect((await ask(h, "a")).status).toBe(404);
    expect((await ask(h, "a")).status).toBe(429);
    expect((await ask(h, "b")).status).toBe(404);
    expect((await ask(h, "c")).status).toBe(404);
    expect((await ask(h, "a")).status).toBe(404);
    expect((await ask(h, "c")).status).toBe(429);
  });

  it("by default tells clients apart by the peer address toNodeListener saw (X-Forwarded-For is not trusted)", async () => {
    const h = await start({ store: false, rateLimit: { windowMs: 60_000, max: 2 } });
    const server = createServer(toNodeListener(h));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 3; i++) statuses.push((await fetch(`http://127.0.0.1:${port}/runs/x`, { headers: { "x-forwarded-for": `10.0.0.${i}` } })).status);
      expect(statuses).toEqual([404, 404, 429]);
      // Through handler.aiSdk the request is made anew and keeps its peer: still over the budget.
      const chat = await new Promise<number>((resolve) => {
        const forward = createServer((req, res) => toNodeListener(h.aiSdk("short"))(req, res));
        forward.listen(0, "127.0.0.1", () => {
          const { port: p } = forward.address() as AddressInfo;
          void fetch(`http://127.0.0.1:${p}/api/chat`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" }).then((r) => {
            forward.closeAllConnections();
            forward.close(() => resolve(r.status));
          });
        });
      });
      expect(chat).toBe(429);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it("refuses bad options, naming the field", async () => {
    model = await startOpenAIServer({ respond: () => textTurn("done") });
    const agent = createReactMachine({ name: "Short", modelClient: ModelClient.resolve({ baseURL: model.baseURL, apiKey: "test", model: "gpt-4o-mini" }), configFile: false });
    expect(() => agentHandler({ agents: { short: agent }, store: false, rateLimit: { windowMs: 0, max: 5 } })).toThrow(/rateLimit\.windowMs must be a positive integer/);
    expect(() => agentHandler({ agents: { short: agent }, store: false, rateLimit: { windowMs: 1000, max: 1.5 } })).toThrow(/rateLimit\.max must be a positive integer/);
  });
});
