import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostgresRunStore } from "../../queue/postgres/store.js";
import type { OpenAIServer } from "../../testing/openai-server.js";
import { scriptMessage, startScriptServer } from "../queue/script-model.js";
import { startCluster, type Cluster } from "./cluster.js";
import { checkBuilt, WorkerProcess } from "./worker-processes.js";

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
