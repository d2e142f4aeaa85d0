import { describe, expect, it } from "vitest";
import { workerProcessFixture } from "./worker-fixture.js";

/**
 * The run queue's guarantees with real worker processes against a real PostgreSQL server: fencing
 * under SIGSTOP, kill -9 mid-model-call and mid-tool, lost notifications. Side effects are counted in
 * the database by the tools themselves. (Load and chaos: workers-load.test.ts.)
 */
describe("PostgreSQL run queue: worker processes that pause, crash or miss notifications", () => {
  const { sql, newSchema, spawnWorker, input, effectsOf } = workerProcessFixture();
  const runRow = async (schema: string, runId: string) =>
    (await sql(`SELECT status, token, updated_at, output, head, (SELECT count(*) FROM ${schema}.checkpoints c WHERE c.run_key = r.run_key) AS checkpoints FROM ${schema}.runs r WHERE run_id = $1`, [runId]))
      .rows[0] as { status: string; token: string; updated_at: string; output: unknown; head: string; checkpoints: string };

  it("fences a paused worker: after SIGSTOP past its lease and SIGCONT it cannot overwrite the new owner's progress", async () => {
    const { schema, store } = await newSchema();
    const a = spawnWorker(schema, "A", { leaseMs: 800 });
    await a.waitFor((e) => e.type === "worker.started", "A to start");
    const runId = await store.submit({ agent: "basic", runId: "paused", input: input({ calls: [{ name: "record", note: "fence:1" }], answer: "B finished it", modelDelayMs: 1_200 }) });
    await a.waitFor((e) => e.type === "agent.event" && e.runId === runId && e.event.type === "model.call.started", "A's model call");
    a.signal("SIGSTOP");
    await new Promise((resolve) => setTimeout(resolve, 1_300));
    const b = spawnWorker(schema, "B", { leaseMs: 5_000 });
    const output = await store.wait(runId);
    expect(output).toMatchObject({ status: "succeeded", finalAnswer: "B finished it" });
    // B's events come over a pipe: wait for them instead of reading what has arrived so far.
    // A was paused in the run's first model call, before any checkpoint worth writing (queue/fresh-start.ts): B starts it over.
    await b.waitFor((e) => e.type === "run.claimed" && e.runId === runId && e.resumed === false, "B to claim the run and start it over");
    const finished = await runRow(schema, runId);
    a.signal("SIGCONT");
    // A wakes with its model reply in hand; its next write finds B's token and it stops the run.
    await a.waitFor((e) => e.type === "run.fenced" && e.runId === runId, "A to find itself fenced");
    await new Promise((resolve) => setTimeout(resolve, 300));
    const after = await runRow(schema, runId);
    expect(after).toEqual(finished);
    expect(await effectsOf("fence:")).toEqual({ "fence:1": 1 });
    expect(a.events.some((e) => e.type === "agent.event" && e.runId === runId && e.event.type === "tool.call.completed")).toBe(false);
  });

  it("resumes a run elsewhere after kill -9 mid-model-call, from its last checkpoint", async () => {
    const { schema, store } = await newSchema();
    const a = spawnWorker(schema, "A", { leaseMs: 800 });
    const runId = await store.submit({
      agent: "basic",
      input: input({ calls: [{ name: "record", note: "model-kill:1" }, { name: "record", note: "model-kill:2" }], answer: "done after the crash", modelDelayMs: 400 }),
    });
    // Killed during the second model call: the first tool's outcome is journaled and checkpointed.
    await a.waitFor((e) => e.type === "agent.event" && e.runId === runId && e.event.type === "tool.call.completed", "A's first tool call");
    await a.waitFor((e) => e.type === "agent.event" && e.runId === runId && e.event.type === "model.call.started" && a.events.filter((x) => x.type === "agent.event" && x.event.type === "model.call.started").length >= 2, "A's second model call");
    await a.kill();
    const b = spawnWorker(schema, "B", { leaseMs: 5_000 });
    const output = await store.wait(runId);
    expect(output).toMatchObject({ status: "succeeded", finalAnswer: "done after the crash" });
    expect(await b.waitFor((e) => e.type === "run.claimed" && e.runId === runId, "B to claim the run")).toMatchObject({ resumed: true });
    expect(await effectsOf("model-kill:")).toEqual({ "model-kill:1": 1, "model-kill:2": 1 });
  });

  it("after kill -9 mid-tool, the resumed run does not run the interrupted call again (outcome unknown)", async () => {
    const { schema, store } = await newSchema();
    const a = spawnWorker(schema, "A", { leaseMs: 800 });
    const runId = await store.submit({
      agent: "basic",
      input: input({ calls: [{ name: "record", note: "tool-kill:slow", sleepMs: 5_000 }, { name: "record", note: "tool-kill:next" }], answer: "carried on" }),
    });
    await a.waitFor((e) => e.type === "agent.event" && e.runId === runId && e.event.type === "tool.call.started", "A's slow tool");
    // Killed once the journal holds the call as started (the tool then sleeps before its side effect).
    const journaled = async () => (await sql(`SELECT 1 FROM ${schema}.tool_journal WHERE run_id = $1 AND state = 'started'`, [runId])).rowCount === 1;
    while (!(await journaled())) await new Promise((resolve) => setTimeout(resolve, 20));
    await a.kill();
    spawnWorker(schema, "B", { leaseMs: 5_000 });
    const output = await store.wait(runId);
    expect(output).toMatchObject({ status: "succeeded", finalAnswer: "carried on" });
    const observation = output.messages.find((m) => m.role === "tool" && m.toolCallId === "call_0");
    expect(observation?.content).toContain("was interrupted");
    expect(await effectsOf("tool-kill:")).toEqual({ "tool-kill:next": 1 });
    const journal = await sql(`SELECT call_id, state FROM ${schema}.tool_journal WHERE run_id = $1 ORDER BY iteration`, [runId]);
    expect(journal.rows).toEqual([
      { call_id: "call_0", state: "completed" },
      { call_id: "call_1", state: "completed" },
    ]);
  });

  it("survives lost notifications by polling", async () => {
    const { schema, store } = await newSchema();
    // A worker that never listens (as behind a transaction-mode pooler) still finds every run.
    const deaf = spawnWorker(schema, "deaf", { listen: false, pollMs: 150 });
    await deaf.waitFor((e) => e.type === "worker.started", "the worker to start");
    const ids = await Promise.all([0, 1, 2].map((i) => store.submit({ agent: "basic", input: input({ calls: [{ name: "record", note: `poll:${i}` }], answer: "polled" }) })));
    for (const runId of ids) expect((await store.wait(runId)).finalAnswer).toBe("polled");
    // The worker finished each run itself (its events reach us over a pipe, a moment after the database says so).
    for (const runId of ids) await deaf.waitFor((e) => e.type === "run.finished" && (e as { runId: string }).runId === runId, `run ${runId} to finish in the deaf worker`);
    // A listening worker whose LISTEN connection is cut still sees runs submitted meanwhile.
    await deaf.kill();
    const listening = spawnWorker(schema, "listening", { pollMs: 150 });
    await listening.waitFor((e) => e.type === "worker.started", "the listening worker to start");
    await sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'jianmu:listen' AND datname = current_database()");
    const late = await store.submit({ agent: "basic", input: input({ calls: [], answer: "still found" }) });
    expect((await store.wait(late)).finalAnswer).toBe("still found");
  });
});
