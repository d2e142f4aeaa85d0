import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostgresRunStore } from "../../queue/postgres/store.js";
import { startWorker, type Worker } from "../../queue/worker.js";
import type { WorkerEvent } from "../../queue/worker-events.js";
import type { OpenAIServer } from "../../testing/openai-server.js";
import { makeAgents } from "../queue/fixture-agents.mjs";
import { scriptMessage, startScriptServer, type RunScript } from "../queue/script-model.js";
import { freshDatabase } from "./database.js";
import { jianmu } from "../queue/fixture-jianmu.js";


/**
 * What a worker does when a run's write goes wrong on a real server. Data the database refuses is
 * the run's end, not a loop: a run whose output or checkpoint PostgreSQL will not store ends
 * `failed` with `termination.error.kind: "unstorable"`, claimed once. (Since migration 2 no string a
 * model or tool produces is refused: a trigger plays the part jsonb used to, with the SQLSTATE jsonb
 * raised for "\u0000".) And a lease renewal that crosses the run's own finish is no takeover.
 */
describe("PostgreSQL run queue: a run's writes on a real server", () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let admin: pg.Client;
  let server: OpenAIServer;
  let store: PostgresRunStore;
  let worker: Worker;
  const events: WorkerEvent[] = [];

  beforeAll(async () => {
    db = await freshDatabase();
    admin = new pg.Client({ connectionString: db.url });
    await admin.connect();
    server = await startScriptServer();
    store = await PostgresRunStore.connect({ connectionString: db.url, schema: "refuse", pollMs: 100 });
    await admin.query(`CREATE FUNCTION refuse.refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
      -- An output is plain JSON or, when it refers to the run's streams, a skeleton (machines/persistence/log/outputs.ts).
      IF coalesce(NEW.output::json->>'finalAnswer', (NEW.output::json->>'skeleton')::json->>'finalAnswer') LIKE '%POISON%' THEN
        RAISE EXCEPTION 'unsupported Unicode escape sequence' USING ERRCODE = '22P05';
      END IF;
      RETURN NEW; END $$`);
    await admin.query("CREATE TRIGGER refuse BEFORE UPDATE ON refuse.runs FOR EACH ROW EXECUTE FUNCTION refuse.refuse()");
    // A checkpoint's messages are elements of the run's streams (the items table).
    await admin.query(`CREATE FUNCTION refuse.refuse_item() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
      IF NEW.body LIKE '%CHECKPOINT-POISON%' THEN
        RAISE EXCEPTION 'unsupported Unicode escape sequence' USING ERRCODE = '22P05';
      END IF;
      RETURN NEW; END $$`);
    await admin.query("CREATE TRIGGER refuse_item BEFORE INSERT ON refuse.items FOR EACH ROW EXECUTE FUNCTION refuse.refuse_item()");
    const agents = makeAgents(jianmu, { baseURL: server.baseURL, journal: store, effect: () => undefined });
    worker = await startWorker({ store, agents, concurrency: 16, leaseMs: 400, pollMs: 20, onEvent: (e) => events.push(e) });
  });
  afterAll(async () => {
    await worker?.stop({ timeoutMs: 2_000 });
    await store?.close();
    await server?.close();
    await admin?.end();
    await db?.drop();
  });

  const input = (script: RunScript) => ({ messages: [scriptMessage(script)] });
  const claims = (runId: string) => events.filter((e) => e.type === "run.claimed" && e.runId === runId).length;

  it.each([
    ["its output", { calls: [{ name: "record" as const, note: "before" }], answer: "POISON in the answer" }],
    ["a checkpoint", { calls: [], answer: "CHECKPOINT-POISON, refused at the first save" }],
  ])("ends failed (unstorable) when the database refuses %s, after one claim", async (_, script) => {
    const runId = await store.submit({ agent: "basic", input: input(script) });
    const output = await store.wait(runId);
    expect(output).toMatchObject({
      status: "failed",
      termination: { reason: "internalError", error: { name: "RunQueueError", kind: "unstorable", message: expect.stringMatching(/could not be stored.*SQLSTATE 22P05/) } },
    });
    expect((await store.status(runId)).status).toBe("failed");
    // Longer than a few leases: it is never claimed again.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(claims(runId)).toBe(1);
    expect(events.some((e) => e.type === "run.abandoned" && e.runId === runId)).toBe(false);
  });

  it("reports no takeover (run.fenced) when a lease renewal crosses the run's own finish", async () => {
    // A 400 ms lease renews every 133 ms, so renewals are in flight while runs finish all the time.
    const ids = await Promise.all(Array.from({ length: 200 }, (_, i) => store.submit({ agent: "basic", input: input({ calls: [], answer: `quick ${i}`, modelDelayMs: (i % 5) * 10 }) })));
    const outputs = await Promise.all(ids.map((runId) => store.wait(runId)));
    expect(outputs.every((o) => o.status === "succeeded")).toBe(true);
    const ours = new Set(ids);
    // The worker tells run.finished once its finish statement has returned; a waiter woken by the same commit's notification may be told first.
    await expect.poll(() => events.filter((e) => e.type === "run.finished" && ours.has(e.runId)).length).toBe(200);
    expect(events.filter((e) => (e.type === "run.fenced" || e.type === "run.abandoned") && ours.has(e.runId))).toEqual([]);
  }, 60_000);
});
