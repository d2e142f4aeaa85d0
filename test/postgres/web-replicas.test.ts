import pg from "pg";
import { DefaultChatTransport, type UIMessage } from "ai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { IdentifiedRunEvent } from "../../http.js";
import type { OpenAIServer } from "../../testing.js";
import { PostgresRunStore } from "../../queue/postgres/store.js";
import { EventReader, postJson } from "../web/helpers.js";
import { answer, send, textOf, toolParts, user } from "../web/chat-helpers.js";
import { freshDatabase } from "./database.js";
import { checkBuilt } from "./worker-processes.js";
import { startPayerModel, WebProcess } from "./web-processes.js";

/**
 * jianmu/http on PostgreSQL with real processes: two HTTP-only replicas and two workers. A run started
 * on one replica is streamed from the other, approved through either, survives its replica's SIGKILL
 * mid-stream and its worker's SIGKILL mid-tool: every stream complete, no event twice, the tool once.
 */
let database: Awaited<ReturnType<typeof freshDatabase>>;
let model: OpenAIServer;
let admin: pg.Client;
let store: PostgresRunStore;
const processes: WebProcess[] = [];
const SCHEMA = "web";

beforeAll(async () => {
  checkBuilt();
  database = await freshDatabase("jianmu_web");
  admin = new pg.Client({ connectionString: database.url });
  await admin.connect();
  await admin.query("CREATE TABLE effects (note text PRIMARY KEY, count integer NOT NULL)");
  // Migrated once here, so the processes connecting at once find the tables.
  store = await PostgresRunStore.connect({ connectionString: database.url, schema: SCHEMA });
  model = await startPayerModel({ words: 40, pauseMs: 25 });
}, 60_000);

afterAll(async () => {
  await Promise.all(processes.map((p) => p.kill()));
  await store?.close();
  await admin?.end();
  await model?.close();
  await database?.drop();
});

async function start(role: "replica" | "worker", id: string): Promise<WebProcess> {
  const started = new WebProcess({ role, id, url: database.url, schema: SCHEMA, baseURL: model.baseURL, leaseMs: 1_500 });
  processes.push(started);
  await started.ready;
  return started;
}

async function effectsOf(note: string): Promise<number> {
  const { rows } = await admin.query<{ count: number }>("SELECT count FROM effects WHERE note = $1", [note]);
  return rows[0]?.count ?? 0;
}

/** Read until `type` or until the stream breaks (a killed replica); never throws for a broken stream. */
async function readUntilBroken(reader: EventReader, type: IdentifiedRunEvent["type"]): Promise<void> {
  await reader.until(type).catch(() => undefined);
}

describe("two replicas and two workers on PostgreSQL, as real processes", () => {
  it("started on A, A killed mid-stream, followed on B from Last-Event-ID, approved on B, its worker killed mid-tool: the stream completes, no event twice, the tool once", async () => {
    const [a, b, w1, w2] = await Promise.all([start("replica", "a"), start("replica", "b"), start("worker", "w1"), start("worker", "w2")]);
    const response = await postJson(`${a.base}/runs`, { agent: "payer", message: "pay inv-77 sleep 2500" });
    expect(response.status).toBe(200);
    const runId = response.headers.get("x-run-id")!;
    const onA = new EventReader(response);
    // Some of the model's words have arrived on A: kill A mid-stream.
    await onA.until("text.delta", () => onA.events.filter((e) => e.type === "text.delta").length >= 3);
    await a.kill();
    await readUntilBroken(onA, "run.finished");
    const seenOnA = onA.events;
    expect(seenOnA.some((e) => e.type === "run.finished")).toBe(false);

    // The page reconnects to B with the last id it saw and carries on.
    const onB = new EventReader(await fetch(`${b.base}/runs/${runId}/stream`, { headers: { "last-event-id": seenOnA.at(-1)!.id } }));
    const request = await onB.until("approval.requested");
    expect(request.type === "approval.requested" && request.data.callId).toBe("call_inv-77");
    expect((await postJson(`${b.base}/runs/${runId}/events`, { type: "guard.approve", callId: "call_inv-77" })).status).toBe(202);

    // The tool has run its effect and sleeps: kill the worker holding the run.
    await onB.until("tool.call.started");
    await expect.poll(() => effectsOf("inv-77"), { timeout: 10_000 }).toBe(1);
    const owner = (await store.status(runId)).owner;
    const holder = [w1, w2].find((w) => owner?.startsWith(w.options.id) || owner === w.options.id)!;
    expect(holder).toBeDefined();
    await holder.kill();

    // The other worker takes the run after the lease and finishes it; B's stream ends with it.
    await onB.until("run.finished");
    const all = [...seenOnA, ...onB.events];
    expect(all.map((e) => Number(e.id))).toEqual(all.map((_, i) => i + 1));
    expect(all.filter((e) => e.type === "run.started")).toHaveLength(1);
    // Exactly the stored stream, in order, once.
    const stored = await store.runEventsAfter(runId, 0, 10_000);
    expect(stored.map((e) => e.seq)).toEqual(all.map((e) => Number(e.id)));
    expect(await effectsOf("inv-77")).toBe(1);
    expect((await store.status(runId)).status).toBe("succeeded");
    for (const p of [b, w1, w2]) expect(p.errors).toBe("");
  }, 60_000);

  it("a useChat conversation started on A is approved through B: the worker runs the tool once and the message completes on B", async () => {
    const [a, b, worker] = await Promise.all([start("replica", "chat-a"), start("replica", "chat-b"), start("worker", "chat-w")]);
    const question = user("u1", "pay inv-88 sleep 0");
    const first = await send(new DefaultChatTransport<UIMessage>({ api: `${a.base}/agents/payer/chat` }), [question]);
    expect(toolParts(first.message)).toEqual([expect.objectContaining({ toolCallId: "call_inv-88", state: "approval-requested" })]);
    expect(first.chunks.at(-1)).toEqual({ type: "finish", finishReason: "tool-calls" });
    expect(await effectsOf("inv-88")).toBe(0);
    // The run is the queue's, parked in the database: nothing of it is left to replica A.
    await expect.poll(async () => (await store.status(first.message.id)).status, { timeout: 10_000 }).toBe("awaitingApproval");

    const second = await send(new DefaultChatTransport<UIMessage>({ api: `${b.base}/agents/payer/chat` }), [question, answer(first.message, true)]);
    expect(second.message.id).toBe(first.message.id);
    expect(toolParts(second.message)).toEqual([expect.objectContaining({ toolCallId: "call_inv-88", state: "output-available", output: "paid inv-88" })]);
    expect(textOf(second.message)).toMatch(/\|Paid, and that is all\.$/);
    expect(second.chunks.at(-1)).toMatchObject({ type: "finish", finishReason: "stop" });
    expect(await effectsOf("inv-88")).toBe(1);
    expect((await store.wait(first.message.id)).status).toBe("succeeded");
    for (const p of [a, b, worker]) expect(p.errors).toBe("");
  }, 60_000);
});
