import { describe, expect, it } from "vitest";
import { human } from "../../actors/messages.js";
import { failedOutput, type QueueSignal } from "../../queue/run-store.js";
import { RunQueueError } from "../../queue/errors.js";
import { Waiters, type WaitSource } from "../../queue/wait.js";

/** A store's side of waiting, over a map of stored outputs, counting the statements a store would run. */
function source(stored: Map<string, unknown>, options: { listening?: boolean; pollMs?: number } = {}) {
  const listeners = new Set<(signal: QueueSignal) => void>();
  const counts = { batches: 0, idsRead: 0 };
  const waitSource: WaitSource = {
    outputs: async (runIds) => {
      counts.batches += 1;
      counts.idsRead += runIds.length;
      return new Map(runIds.flatMap((id) => (stored.has(id) ? [[id, stored.get(id) ?? null] as const] : [])));
    },
    unknownRun: (runId) => new RunQueueError("unknown_run", `no run ${runId}`),
    subscribe: (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    listeningSince: () => (options.listening ? 1 : undefined),
    pollMs: () => options.pollMs ?? 5,
  };
  const finish = (runId: string, output: unknown) => {
    stored.set(runId, output);
    for (const listener of listeners) listener({ kind: "finished", runId });
  };
  return { waitSource, counts, listeners, finish };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("Waiters: a stored output is checked before it is handed back", () => {
  const good = failedOutput("r1", "could not start", { messages: [human("hi")] });

  it("hands back a stored output that fits AgentOutputSchema, as JSON text or parsed", async () => {
    expect(await new Waiters(source(new Map([["r1", JSON.stringify(good)]])).waitSource).wait("r1")).toEqual(good);
    expect(await new Waiters(source(new Map([["r1", good]])).waitSource).wait("r1")).toEqual(good);
  });

  it.each([
    ["not JSON", "{status", /stored output of run "r1" is damaged/],
    ["a wrong status", JSON.stringify({ ...good, status: "won" }), /damaged \(output\.status: /],
    ["usage that is not counts", { ...good, usage: { promptTokens: -1, completionTokens: 0, totalTokens: 0 } }, /output\.usage\.promptTokens/],
    ["a message of no known role", { ...good, messages: [{ role: "robot", content: "x" }] }, /output\.messages\.0/],
  ])("refuses %s as damaged, naming the field", async (_, stored, message) => {
    const error = await new Waiters(source(new Map([["r1", stored]])).waitSource).wait("r1").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RunQueueError);
    expect(error).toMatchObject({ problem: "damaged", message: expect.stringMatching(message) });
  });

  it("refuses an unknown run", async () => {
    await expect(new Waiters(source(new Map()).waitSource).wait("nope")).rejects.toMatchObject({ problem: "unknown_run" });
  });
});

describe("Waiters: many waits cost one statement per wake-up", () => {
  const good = (runId: string) => JSON.stringify(failedOutput(runId, "done"));

  it("without notifications, 500 waiters poll with one statement per pollMs, not one each", async () => {
    const stored = new Map<string, unknown>(Array.from({ length: 500 }, (_, i) => [`r${i}`, null]));
    const { waitSource, counts } = source(stored, { pollMs: 20 });
    const waiters = new Waiters(waitSource);
    const all = Promise.all([...stored.keys()].map((runId) => waiters.wait(runId)));
    await sleep(210);
    // About 10 ticks: 10 statements, each reading all 500 runs.
    expect(counts.batches).toBeGreaterThanOrEqual(5);
    expect(counts.batches).toBeLessThanOrEqual(15);
    for (const runId of stored.keys()) stored.set(runId, good(runId));
    expect((await all).map((o) => o.runId)).toEqual([...stored.keys()]);
  });

  it("waits begun in one turn read together: 300 of them, and one for a run that does not exist, in one statement", async () => {
    const stored = new Map<string, unknown>(Array.from({ length: 300 }, (_, i) => [`r${i}`, i % 2 === 0 ? good(`r${i}`) : null]));
    const { waitSource, counts } = source(stored, { listening: true, pollMs: 10_000 });
    const waiters = new Waiters(waitSource);
    const waits = [...stored.keys()].map((runId) => waiters.wait(runId));
    const missing = waiters.wait("nope").catch((error: unknown) => error);
    expect(await missing).toMatchObject({ problem: "unknown_run" });
    expect(counts).toEqual({ batches: 1, idsRead: 301 });
    // The finished half is back from that one read; the others still wait.
    expect((await Promise.all(waits.filter((_, i) => i % 2 === 0))).map((o) => o.runId)).toEqual([...stored.keys()].filter((_, i) => i % 2 === 0));
  });

  it("with working notifications, no one polls: a finished signal reads that run alone, a burst of them in one read", async () => {
    const stored = new Map<string, unknown>(Array.from({ length: 200 }, (_, i) => [`r${i}`, null]));
    const { waitSource, counts, finish, listeners } = source(stored, { listening: true, pollMs: 10 });
    const waiters = new Waiters(waitSource);
    const all = [...stored.keys()].map((runId) => waiters.wait(runId));
    await sleep(100);
    // The waits' first read (together), and one read of everyone when the first tick found notifications
    // working (something may have finished before); then none.
    expect(counts.batches).toBe(2);
    finish("r7", good("r7"));
    expect((await all[7]!).runId).toBe("r7");
    expect(counts.batches).toBe(3);
    expect(counts.idsRead).toBe(200 + 200 + 1);
    // A burst of finishes told in one turn (one socket read of notifications) is one read, not one per run.
    for (const runId of stored.keys()) if (runId !== "r7") finish(runId, good(runId));
    await Promise.all(all);
    expect(counts.batches).toBe(4);
    expect(counts.idsRead).toBe(200 + 200 + 1 + 199);
    // Nobody waits: the subscription is gone.
    expect(listeners.size).toBe(0);
  });

  it("takes a finished run's output from its signal when the signal carries it: no read", async () => {
    const stored = new Map<string, unknown>([["r1", null]]);
    const { waitSource, counts, listeners } = source(stored, { listening: true, pollMs: 10_000 });
    const waiters = new Waiters(waitSource);
    const waiting = waiters.wait("r1");
    await sleep(10);
    expect(counts.batches).toBe(1);
    for (const listener of listeners) listener({ kind: "finished", runId: "r1", output: good("r1") });
    expect((await waiting).runId).toBe("r1");
    expect(counts.batches).toBe(1);
  });

  it("reads the stored output when the one a signal carries does not check out", async () => {
    const stored = new Map<string, unknown>([["r1", null]]);
    const { waitSource, counts, listeners } = source(stored, { listening: true, pollMs: 10_000 });
    const waiters = new Waiters(waitSource);
    const waiting = waiters.wait("r1");
    await sleep(10);
    stored.set("r1", good("r1"));
    for (const listener of listeners) listener({ kind: "finished", runId: "r1", output: "{truncated" });
    expect((await waiting).runId).toBe("r1");
    expect(counts.batches).toBe(2);
  });

  it("shares one abort listener per signal: 50 waits on one signal, no MaxListenersExceededWarning, all rejected on abort", async () => {
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on("warning", onWarning);
    try {
      const stored = new Map<string, unknown>(Array.from({ length: 50 }, (_, i) => [`r${i}`, null]));
      const waiters = new Waiters(source(stored, { listening: true }).waitSource);
      const controller = new AbortController();
      const all = [...stored.keys()].map((runId) => waiters.wait(runId, controller.signal).catch((e: unknown) => e));
      await sleep(20);
      controller.abort(new Error("gave up"));
      expect((await Promise.all(all)).every((e) => e instanceof Error && e.message === "gave up")).toBe(true);
      await sleep(10);
      expect(warnings.filter((w) => w.name === "MaxListenersExceededWarning")).toEqual([]);
    } finally {
      process.off("warning", onWarning);
    }
  });
});
