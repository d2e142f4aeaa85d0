import { describe, expect, it } from "vitest";
import { outcomeApart } from "../../machines/persistence/log/journal-packing.js";
import type { WorkerEvent } from "../../queue/worker-events.js";
import { workerProcessFixture } from "./worker-fixture.js";

/**
 * The run queue under load with real worker processes against a real PostgreSQL server: 1000 parked
 * runs on a concurrency-4 worker; several workers killed and restarted at random under many runs.
 */
describe("PostgreSQL run queue: worker processes under load and chaos", () => {
  const { sql, newSchema, spawnWorker, spawned, input, effectsOf } = workerProcessFixture();
  it("keeps 1000 parked runs without a worker slot; approvals for a few finish them while the rest wait", async () => {
    const { schema, store } = await newSchema();
    const worker = spawnWorker(schema, "P", { concurrency: 4, leaseMs: 5_000, pollMs: 100 });
    const ids = Array.from({ length: 1000 }, (_, i) => `parked-${String(i).padStart(4, "0")}`);
    for (let i = 0; i < ids.length; i += 50) {
      await Promise.all(ids.slice(i, i + 50).map((runId) => store.submit({ agent: "approver", runId, input: input({ calls: [{ name: "pay", note: `parked:${runId}` }], answer: "paid" }) })));
    }
    const parkedCount = async () => Number((await sql(`SELECT count(*) AS n FROM ${schema}.runs WHERE status = 'awaitingApproval' AND owner IS NULL AND lease_until IS NULL`)).rows[0].n);
    const deadline = Date.now() + 60_000;
    while ((await parkedCount()) < 1000 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await parkedCount()).toBe(1000);
    const approved = ids.filter((_, i) => i % 100 === 7);
    for (const runId of approved) await store.send(runId, { type: "guard.approve", callId: "call_0" });
    for (const runId of approved) expect((await store.wait(runId)).finalAnswer).toBe("paid");
    expect(Object.keys(await effectsOf("parked:")).length).toBe(approved.length);
    expect(await parkedCount()).toBe(1000 - approved.length);
    expect(worker.events.filter((e) => e.type === "run.parked").length).toBe(1000);
  }, 90_000);

  it("N workers x M runs with kill -9 and restarts: every run ends once, every completed tool call ran once", async () => {
    const { schema, store } = await newSchema();
    const M = 24;
    const pool = Array.from({ length: 3 }, (_, i) => spawnWorker(schema, `chaos-${i}`, { concurrency: 4, leaseMs: 700, pollMs: 100 }));
    await Promise.all(pool.map((w) => w.waitFor((e) => e.type === "worker.started", "the worker to start")));
    const ids: string[] = [];
    for (let i = 0; i < M; i++) {
      const runId = `chaos-${i}`;
      ids.push(runId);
      const calls = [0, 1, 2].map((k) => ({ name: "record" as const, note: `chaos:${runId}:${k}`, sleepMs: 40 + ((i * 7 + k * 13) % 5) * 30 }));
      await store.submit({ agent: "basic", runId, input: input({ calls, answer: `finished ${runId}`, modelDelayMs: 30 }) });
    }
    // Kill a worker in the middle of a tool call and start a fresh one in its place, a few times, while the runs go on.
    for (let round = 0; round < 4; round++) {
      const victim = round % pool.length;
      const busy = (e: WorkerEvent) => e.type === "agent.event" && e.event.type === "tool.call.started";
      // The first victim surely has a run in flight; later ones may find the work done (then killed anyway).
      await pool[victim]!.waitFor(busy, "a tool call in flight", round === 0 ? 20_000 : 3_000).catch(() => undefined);
      await pool[victim]!.kill();
      pool[victim] = spawnWorker(schema, `chaos-${victim}-r${round}`, { concurrency: 4, leaseMs: 700, pollMs: 100 });
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const outputs = await Promise.all(ids.map((runId) => store.wait(runId)));
    for (const [i, output] of outputs.entries()) expect(output).toMatchObject({ status: "succeeded", finalAnswer: `finished chaos-${i}` });
    // The kills hit runs in flight: some were resumed from a checkpoint by another process.
    const everyEvent = spawned().flatMap((w) => w.events);
    expect(everyEvent.some((e) => e.type === "run.claimed" && e.resumed)).toBe(true);
    const statuses = await sql(`SELECT status, count(*)::int AS n FROM ${schema}.runs GROUP BY status`);
    expect(statuses.rows).toEqual([{ status: "succeeded", n: M }]);
    const effects = await effectsOf("chaos:");
    // No side effect ever happened twice...
    expect(Object.values(effects).every((count) => count === 1)).toBe(true);
    // ...and every call the journal holds as completed with a result ran exactly once.
    // Outcomes are stored deflated, their text once: in the journal until the conversation holds it (machines/persistence/log/journal-packing.ts).
    const journaled = await sql(
      `SELECT j.run_id, j.call_id, j.packed, j.content, (SELECT body FROM ${schema}.items i WHERE i.stream_id = j.item_stream AND i.seq = j.item_seq) AS element
       FROM ${schema}.tool_journal j WHERE j.state = 'completed'`,
    );
    const completed = { rows: journaled.rows.map((r) => ({ ...r, outcome: outcomeApart(r.packed as Buffer, r.content as Buffer | null, r.element as string | null) as { status: string; content: string } })) };
    const ran = completed.rows.filter((r) => r.outcome.status === "ok");
    expect(ran.length).toBeGreaterThan(0);
    for (const row of ran) expect(effects[row.outcome.content.replace(/^recorded /, "")]).toBe(1);
    // A call that never ran to completion was reported as an unknown outcome, never run twice.
    const unknown = completed.rows.filter((r) => r.outcome.status !== "ok");
    for (const row of unknown) expect(row.outcome.content).toContain("was interrupted");
    expect(ran.length + unknown.length).toBe(M * 3);
  }, 90_000);
});
