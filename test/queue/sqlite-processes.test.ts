import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SqliteRunStore } from "../../queue/sqlite/store.js";
import type { OpenAIServer } from "../../testing/openai-server.js";
import { checkBuilt, WorkerProcess } from "../postgres/worker-processes.js";
import { scriptMessage, startScriptServer } from "./script-model.js";

/** The embedded default: one SQLite file shared by several worker processes on one machine. */
describe("SqliteRunStore with worker processes", () => {
  let dir: string;
  let server: OpenAIServer;
  const workers: WorkerProcess[] = [];
  beforeAll(async () => {
    checkBuilt();
    dir = mkdtempSync(join(tmpdir(), "jianmu-sqlite-workers-"));
    server = await startScriptServer();
  });
  afterAll(async () => {
    await Promise.all(workers.map((w) => w.kill()));
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("two processes share the runs; one killed mid-run, every run ends once and no tool call ran twice", async () => {
    const path = join(dir, "runs.db");
    const store = new SqliteRunStore({ path, pollMs: 50 });
    const spawnWorker = (id: string) => {
      const worker = new WorkerProcess({ url: "", schema: "", sqlite: path, baseURL: server.baseURL, id, concurrency: 3, leaseMs: 600, pollMs: 50 });
      workers.push(worker);
      return worker;
    };
    const a = spawnWorker("sqlite-a");
    const b = spawnWorker("sqlite-b");
    await Promise.all([a, b].map((w) => w.waitFor((e) => e.type === "worker.started", "the worker to start")));
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) {
      const calls = [0, 1].map((k) => ({ name: "record" as const, note: `sq:${i}:${k}`, sleepMs: 60 }));
      ids.push(await store.submit({ agent: "basic", runId: `sq-${i}`, input: { messages: [scriptMessage({ calls, answer: `done ${i}`, modelDelayMs: 20 })] } }));
    }
    await a.waitFor((e) => e.type === "run.claimed", "a claim by the first worker");
    await a.kill();
    const outputs = await Promise.all(ids.map((runId) => store.wait(runId)));
    outputs.forEach((output, i) => expect(output).toMatchObject({ status: "succeeded", finalAnswer: `done ${i}` }));
    // B's events come over a pipe, a moment after the store says the run finished: wait for them.
    await b.waitFor((e) => e.type === "run.finished", "B to finish a run");
    const db = new Database(path, { readonly: true });
    const counts = db.prepare<[], { count: number }>("SELECT count FROM effects").all();
    db.close();
    expect(counts.length).toBeGreaterThan(0);
    expect(counts.every((c) => c.count === 1)).toBe(true);
    await store.close();
  }, 60_000);
});
