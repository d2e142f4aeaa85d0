import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostgresRunStore } from "../../queue/postgres/store.js";
import type { OpenAIServer } from "../../testing/openai-server.js";
import { scriptMessage, startScriptServer } from "../queue/script-model.js";
import { startCluster, type Cluster } from "./cluster.js";
import { checkBuilt, WorkerProcess } from "./worker-processes.js";

/**
 * A server with fewer connections than the workers would like (max_connections=20; ten worker
 * processes at the default pool want 50): a refused connection is an error naming maxConnections,
 * and the queue still finishes every run with every tool result kept (writes of held runs retry
 * inside their lease). The long version, with kills and restarts: bench/queue/chaos.mjs.
 */
describe("PostgreSQL run queue: a server short of connections (max_connections=20)", () => {
  let cluster: Cluster;
  let server: OpenAIServer;
  let dir: string;
  const workers: WorkerProcess[] = [];

  beforeAll(async () => {
    checkBuilt();
    cluster = await startCluster({ maxConnections: 20 });
    server = await startScriptServer();
    dir = mkdtempSync(join(tmpdir(), "jianmu-connections-"));
  });
  afterAll(async () => {
    await Promise.all(workers.map((w) => w.kill()));
    await server?.close();
    cluster?.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  it("refuses with an error that names maxConnections and the sizing, not the server", async () => {
    const hogs: pg.Client[] = [];
    try {
      for (;;) {
        const client = new pg.Client({ connectionString: cluster.url });
        try {
          await client.connect();
          hogs.push(client);
        } catch {
          break;
        }
      }
      const error = await PostgresRunStore.connect({ connectionString: cluster.url, schema: "refused" }).catch((e: unknown) => e);
      expect(error).toMatchObject({ problem: "connection", message: expect.stringMatching(/too many clients already.*maxConnections \(here 4\) plus 1 for LISTEN.*docs\/scale\.md/) });
      expect((error as Error).message).not.toContain(String(cluster.port));
    } finally {
      await Promise.all(hogs.map((c) => c.end()));
    }
  });

  it("ten worker processes with the default pool finish every run, no tool result lost or run twice", async () => {
    const store = await PostgresRunStore.connect({ connectionString: cluster.url, schema: "crowd", maxConnections: 2, pollMs: 200 });
    try {
      const effectsFile = join(dir, "effects.txt");
      for (let i = 0; i < 10; i++) {
        workers.push(new WorkerProcess({ url: cluster.url, schema: "crowd", baseURL: server.baseURL, id: `crowd-${i}`, concurrency: 4, leaseMs: 10_000, pollMs: 200, effectsFile }));
      }
      const ids: string[] = [];
      for (let i = 0; i < 40; i++) {
        const calls = [0, 1].map((k) => ({ name: "record" as const, note: `crowd:${i}:${k}`, sleepMs: 30 }));
        ids.push(await store.submit({ agent: "basic", runId: `crowd-${i}`, input: { messages: [scriptMessage({ calls, answer: `done ${i}`, modelDelayMs: 20 })] } }));
      }
      const outputs = await Promise.all(ids.map((runId) => store.wait(runId)));
      outputs.forEach((output, i) => expect(output).toMatchObject({ status: "succeeded", finalAnswer: `done ${i}` }));
      // Every call ran once and its result reached the model: no unknown outcome, no journal failure.
      const lines = readFileSync(effectsFile, "utf8").trim().split("\n").sort();
      expect(lines).toEqual(ids.flatMap((_, i) => [`crowd:${i}:0`, `crowd:${i}:1`]).sort());
      const observations = outputs.flatMap((o) => o.messages.filter((m) => m.role === "tool").map((m) => m.content));
      expect(observations.filter((text) => !/^recorded crowd:/.test(String(text)))).toEqual([]);
      // No worker crashed; they are done, and their connections are needed for a look at the journal.
      expect(workers.map((w) => w.process.exitCode)).toEqual(Array(10).fill(null));
      await Promise.all(workers.map((w) => w.kill()));
      const admin = new pg.Client({ connectionString: cluster.url });
      await admin.connect();
      const journal = await admin.query("SELECT state, count(*)::int AS n FROM crowd.tool_journal GROUP BY state");
      await admin.end();
      expect(journal.rows).toEqual([{ state: "completed", n: 80 }]);
      // The server did turn connections away (its log says so), and no run was given up for it.
      expect(readFileSync(join(cluster.dir, "server.log"), "utf8")).toContain("too many clients already");
      expect(workers.flatMap((w) => w.events).filter((e) => e.type === "run.abandoned" || e.type === "run.fenced")).toEqual([]);
    } finally {
      await store.close();
    }
  }, 120_000);
});
