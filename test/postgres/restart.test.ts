import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostgresRunStore } from "../../queue/postgres/store.js";
import { startWorker, type Worker } from "../../queue/worker.js";
import type { WorkerEvent } from "../../queue/worker-events.js";
import type { OpenAIServer } from "../../testing/openai-server.js";
import { makeAgents } from "../queue/fixture-agents.mjs";
import { scriptMessage, startScriptServer } from "../queue/script-model.js";
import { startCluster, type Cluster } from "./cluster.js";
import { checkBuilt, WorkerProcess } from "./worker-processes.js";
import { jianmu } from "../queue/fixture-jianmu.js";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A database restart mid-run, on a cluster of this file's own (the shared one must stay up). */
describe("a PostgreSQL restart under running workers", () => {
  let cluster: Cluster;
  let server: OpenAIServer;
  let worker: WorkerProcess | undefined;
  let store: PostgresRunStore | undefined;

  beforeAll(async () => {
    checkBuilt();
    cluster = await startCluster();
    server = await startScriptServer();
    const client = new pg.Client({ connectionString: cluster.url });
    await client.connect();
    await client.query("CREATE TABLE effects (note text PRIMARY KEY, count integer NOT NULL)");
    await client.end();
  });
  afterAll(async () => {
    await worker?.kill();
    await store?.close();
    await server?.close();
    cluster?.destroy();
  });

  /**
   * A worker in this process (its tools count effects in memory, which the outage cannot touch) on
   * a store whose URL carries a password, with 4 runs of 4 tool calls under way.
   */
  const inProcess = async (schema: string, leaseMs: number, modelDelayMs: number) => {
    const url = new URL(cluster.url);
    url.password = "s3cret-pw";
    const runStore = await PostgresRunStore.connect({ connectionString: url.toString(), schema, pollMs: 100 });
    const effects = new Map<string, number>();
    const events: WorkerEvent[] = [];
    const agents = makeAgents(jianmu, { baseURL: server.baseURL, journal: runStore, effect: (note) => void effects.set(note, (effects.get(note) ?? 0) + 1) });
    const running: Worker = await startWorker({ store: runStore, agents, concurrency: 4, leaseMs, pollMs: 100, onEvent: (e) => events.push(e) });
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      const calls = [0, 1, 2, 3].map((k) => ({ name: "record" as const, note: `${schema}:${i}:${k}`, sleepMs: 150 }));
      ids.push(await runStore.submit({ agent: "basic", input: { messages: [scriptMessage({ calls, answer: `survived ${i}`, modelDelayMs })] } }));
    }
    const started = async () => {
      while (!events.some((e) => e.type === "agent.event" && e.event.type === "tool.call.completed")) await sleep(10);
    };
    return { runStore, effects, events, running, ids, started };
  };
  /** Everything a run and its worker said: the worker's events (operators read them) and the outputs (the model read them). */
  const texts = (events: WorkerEvent[], outputs: unknown[]) => JSON.stringify([events, outputs]);

  it("a restart shorter than the lease: every write waits it out, no run is given up, no call is lost or unknown", async () => {
    const { runStore, effects, events, running, ids, started } = await inProcess("short", 8_000, 50);
    try {
      await started();
      const finishedBefore = events.filter((e) => e.type === "run.finished").length;
      await cluster.stop();
      await sleep(800);
      await cluster.start();
      const outputs = await Promise.all(ids.map((runId) => runStore.wait(runId)));
      outputs.forEach((output, i) => expect(output).toMatchObject({ status: "succeeded", finalAnswer: `survived ${i}` }));
      // The runs were under way across the outage, and nothing was given up or taken over.
      expect(finishedBefore).toBeLessThan(4);
      expect(events.filter((e) => e.type === "run.abandoned" || e.type === "run.fenced")).toEqual([]);
      expect([...effects.values()]).toEqual(Array(16).fill(1));
      expect(effects.size).toBe(16);
      const all = texts(events, outputs);
      expect(all).not.toMatch(/journal could not|was interrupted|outcome_unknown/);
      expect(all).not.toContain("s3cret-pw");
      const client = new pg.Client({ connectionString: cluster.url });
      await client.connect();
      const { rows } = await client.query("SELECT state, count(*)::int AS n FROM short.tool_journal GROUP BY state");
      await client.end();
      expect(rows).toEqual([{ state: "completed", n: 16 }]);
    } finally {
      await running.stop({ timeoutMs: 2_000 });
      await runStore.close();
    }
  }, 60_000);

  it("a restart longer than the lease: held runs are given up, not told their tools failed, and resume from their checkpoints", async () => {
    const { runStore, effects, events, running, ids, started } = await inProcess("long", 1_200, 300);
    try {
      await started();
      await cluster.stop();
      await sleep(3_000);
      await cluster.start();
      const outputs = await Promise.all(ids.map((runId) => runStore.wait(runId)));
      outputs.forEach((output, i) => expect(output).toMatchObject({ status: "succeeded", finalAnswer: `survived ${i}` }));
      const abandoned = events.filter((e) => e.type === "run.abandoned");
      expect(abandoned.length).toBeGreaterThan(0);
      expect(events.some((e) => e.type === "run.claimed" && e.resumed)).toBe(true);
      // Given up by reason of the outage (the worker's own events say so), never as a takeover.
      expect(abandoned.every((e) => e.type === "run.abandoned" && /PostgreSQL|database/.test(e.reason))).toBe(true);
      expect(events.filter((e) => e.type === "run.fenced")).toEqual([]);
      // At most once: a call whose result could not be journaled before the lease ran out is an
      // unknown outcome (the run says so to the model), never run twice.
      expect([...effects.values()].every((n) => n === 1)).toBe(true);
      // The model never read that the journal failed, nor anything of the database's errors.
      expect(JSON.stringify(outputs)).not.toMatch(/journal could not|ECONNREFUSED|PostgreSQL|postgres:\/\//);
      expect(texts(events, outputs)).not.toContain("s3cret-pw");
    } finally {
      await running.stop({ timeoutMs: 2_000 });
      await runStore.close();
    }
  }, 60_000);

  it("workers reconnect with backoff and every run continues from its checkpoint", async () => {
    store = await PostgresRunStore.connect({ connectionString: cluster.url, schema: "restart", pollMs: 200 });
    worker = new WorkerProcess({ url: cluster.url, schema: "restart", baseURL: server.baseURL, id: "survivor", concurrency: 4, leaseMs: 1_500, pollMs: 200 });
    await worker.waitFor((e) => e.type === "worker.started", "the worker to start");
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      const calls = [0, 1, 2, 3].map((k) => ({ name: "record" as const, note: `restart:${i}:${k}`, sleepMs: 150 }));
      ids.push(await store.submit({ agent: "basic", input: { messages: [scriptMessage({ calls, answer: `survived ${i}`, modelDelayMs: 50 })] } }));
    }
    await worker.waitFor((e) => e.type === "agent.event" && e.event.type === "tool.call.completed", "a first tool call");
    cluster.stopServer();
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    cluster.startServer();
    const outputs = await Promise.all(ids.map((runId) => store!.wait(runId)));
    outputs.forEach((output, i) => expect(output).toMatchObject({ status: "succeeded", finalAnswer: `survived ${i}` }));
    // The outage was felt (and survived) by the worker process, which is still up.
    expect(worker.events.some((e) => e.type === "worker.error" || e.type === "run.abandoned")).toBe(true);
    expect(worker.process.exitCode).toBeNull();
    const client = new pg.Client({ connectionString: cluster.url });
    await client.connect();
    const { rows } = await client.query<{ count: number }>("SELECT count FROM effects");
    await client.end();
    expect(rows.every((r) => r.count === 1)).toBe(true);
  }, 60_000);
});
