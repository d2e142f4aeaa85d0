import { randomBytes } from "node:crypto";
import { createActor } from "xstate";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { runAgent } from "../../machines/runner.js";
import { loadThread } from "../../machines/persistence/log/threads.js";
import { persistAgent } from "../../machines/persistence/persistence.js";
import { FencedError, RunQueueError } from "../../queue/errors.js";
import type { RunObserver } from "../../queue/run-events.js";
import { failedOutput, type RunStore } from "../../queue/run-store.js";
import type { UnknownAgents } from "../../queue/schemas.js";
import { startWorker, type Worker } from "../../queue/worker.js";
import type { WorkerEvent } from "../../queue/worker-events.js";
import type { OpenAIServer } from "../../testing/openai-server.js";
import { wireMediaOf } from "../../testing/recordings.js";
import { storeRunEvents } from "../../web/server/store-events.js";
import { makeAgents } from "./fixture-agents.mjs";
import { scriptMessage, startScriptServer, type RunScript } from "./script-model.js";
import { jianmu } from "./fixture-jianmu.js";


/** Opens a fresh, empty store (a new database file, schema or object) each time, with these options. */
export type OpenStore = (options?: { unknownAgents?: UnknownAgents; keepFinishedMs?: number }) => Promise<RunStore>;

function until(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 15_000): Promise<void> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const tick = async () => {
      try {
        if (await check()) return resolve();
      } catch (error) {
        return reject(error);
      }
      if (Date.now() - started > timeoutMs) return reject(new Error(`timed out waiting for ${what}`));
      setTimeout(tick, 20);
    };
    void tick();
  });
}

/**
 * The run queue's contract, the same for every store: run it against memory, SQLite and PostgreSQL.
 * Workers run in this process here; the multi-process semantics live in test/postgres/.
 */
/** `signals`: the store tells its workers what became due (`subscribe`); SQLite's workers poll instead. */
/** `finishAndClaim`: the store has the optional `RunStore.finishAndClaim` (the memory store has not). */
export function describeRunStoreConformance(name: string, open: OpenStore, { signals = true, finishAndClaim = true }: { signals?: boolean; finishAndClaim?: boolean } = {}): void {
  describe(`run store conformance: ${name}`, () => {
    let server: OpenAIServer;
    let store: RunStore;
    let worker: Worker | undefined;
    let effects: Map<string, number>;
    let events: WorkerEvent[];
    const cleanups: (() => Promise<void>)[] = [];

    beforeAll(async () => {
      server = await startScriptServer();
    });
    afterAll(async () => {
      await server.close();
    });
    afterEach(async () => {
      await worker?.stop({ timeoutMs: 2_000 });
      worker = undefined;
      for (const cleanup of cleanups.splice(0)) await cleanup();
      await store.close();
    });

    const setup = async (workerOptions: { leaseMs?: number; pollMs?: number; concurrency?: number; observe?: RunObserver } = {}, storeOptions: { keepFinishedMs?: number } = {}) => {
      store = await open(storeOptions);
      effects = new Map();
      events = [];
      const agents = makeAgents(jianmu, {
        baseURL: server.baseURL,
        journal: store,
        effect: (note) => void effects.set(note, (effects.get(note) ?? 0) + 1),
        approvalTimeoutMs: 600,
      });
      worker = await startWorker({ store, agents, concurrency: workerOptions.concurrency ?? 4, leaseMs: workerOptions.leaseMs ?? 5_000, pollMs: workerOptions.pollMs ?? 50, onEvent: (e) => events.push(e), ...(workerOptions.observe ? { observe: workerOptions.observe } : {}) });
      // Ready means ready: the agents are known to the store by the time startWorker resolves.
      expect(events.map((e) => e.type)).toContain("worker.started");
      return agents;
    };
    const input = (script: RunScript) => ({ messages: [scriptMessage(script)] });

    it("runs a submitted run to its output; the same runId twice is one run", async () => {
      await setup();
      const script: RunScript = { calls: [{ name: "record", note: "a1" }, { name: "record", note: "a2" }], answer: "all recorded" };
      const runId = await store.submit({ agent: "basic", input: input(script), runId: "run-one" });
      expect(await store.submit({ agent: "basic", input: input(script), runId: "run-one" })).toBe("run-one");
      const output = await store.wait(runId);
      expect(output).toMatchObject({ status: "succeeded", finalAnswer: "all recorded", runId: "run-one" });
      expect(Object.fromEntries(effects)).toEqual({ a1: 1, a2: 1 });
      expect(await store.status(runId)).toMatchObject({ status: "succeeded", pendingApprovals: [] });
      expect((await store.status(runId)).owner).toBeUndefined();
      // The final checkpoint went with the output (one write): it is the run's last, and finished.
      expect(await store.load(runId)).toMatchObject({ status: "succeeded", snapshot: { status: "done" } });
      const listed = await store.list({ agent: "basic" });
      expect(listed.map((r) => r.runId)).toEqual(["run-one"]);
      expect(listed[0]).toMatchObject({ status: "succeeded", agent: "basic" });
      expect(await store.list({ status: "queued" })).toEqual([]);
      // A fresh id when none is given.
      const other = await store.submit({ agent: "basic", input: input({ calls: [], answer: "hi" }) });
      expect(other).not.toBe("run-one");
      expect((await store.wait(other)).finalAnswer).toBe("hi");
    });

    it("a run's stored end event comes after its output: a follower that reads it finds the run finished", async () => {
      await setup({ observe: storeRunEvents({ appendRunEvents: (...args) => appendNoting(...args) }) });
      // What the run's status was when each batch holding an end event was written.
      const statusAtEnd: string[] = [];
      const appendNoting: RunStore["appendRunEvents"] = async (runId, token, batch) => {
        if (batch.some((event) => event.type === "run.finished" || event.type === "run.error")) statusAtEnd.push((await store.status(runId)).status);
        return store.appendRunEvents(runId, token, batch);
      };
      const runId = await store.submit({ agent: "basic", input: input({ calls: [{ name: "record", note: "e1" }], answer: "ended in order" }) });
      expect(await store.wait(runId)).toMatchObject({ finalAnswer: "ended in order" });
      await until(async () => (await store.runEventsAfter(runId, 0, 1_000)).some((event) => event.type === "run.finished"), "the end event to be stored");
      expect(statusAtEnd).toEqual(["succeeded"]);
      const types = (await store.runEventsAfter(runId, 0, 1_000)).map((event) => event.type);
      expect(types.filter((type) => type === "run.finished")).toHaveLength(1);
      expect(types.at(-1)).toBe("run.finished");
      expect(await store.lastRunEventSeq(runId)).toBe(types.length);
      expect(await store.lastRunEventSeq("no-such-run")).toBe(0);
    });

    it("with keepFinishedMs the worker deletes a finished run as it ages; a parked run stays and finishes", async () => {
      await setup({}, { keepFinishedMs: 100 });
      const done = await store.submit({ agent: "basic", input: input({ calls: [{ name: "record", note: "k1" }], answer: "kept a while" }) });
      const parked = await store.submit({ agent: "approver", input: input({ calls: [{ name: "pay", note: "p1" }], answer: "paid" }) });
      expect((await store.wait(done)).finalAnswer).toBe("kept a while");
      expect((await store.history(done)).length).toBeGreaterThan(0);
      await until(async () => (await store.history(done)).length === 0, "the finished run to be pruned", 10_000);
      expect(await store.load(done)).toBeUndefined();
      await expect(store.status(done)).rejects.toMatchObject({ problem: "unknown_run" });
      await until(() => events.some((e) => e.type === "run.parked" && e.runId === parked), "the run to park");
      expect(await store.status(parked)).toMatchObject({ status: "awaitingApproval" });
      await store.send(parked, { type: "guard.approve", callId: "call_0" });
      expect((await store.wait(parked)).finalAnswer).toBe("paid");
      expect(events.filter((e) => e.type === "worker.error")).toEqual([]);
    });

    it("parks a run waiting for approval with no worker and no lease; an approval from anywhere resumes it once", async () => {
      await setup();
      const script: RunScript = { calls: [{ name: "pay", note: "inv-1" }], answer: "paid" };
      const runId = await store.submit({ agent: "approver", input: input(script) });
      await until(() => events.some((e) => e.type === "run.parked" && e.runId === runId), "the run to park");
      const parked = await store.status(runId);
      expect(parked.status).toBe("awaitingApproval");
      expect(parked.owner).toBeUndefined();
      expect(parked.pendingApprovals).toEqual([expect.objectContaining({ callId: "call_0", name: "pay" })]);
      expect(worker!.active).toBe(0);
      expect(effects.size).toBe(0);
      expect(await store.send(runId, { type: "guard.approve", callId: "call_0" })).toBe(true);
      // The same decision again is recorded once.
      expect(await store.send(runId, { type: "guard.approve", callId: "call_0" })).toBe(false);
      const output = await store.wait(runId);
      expect(output).toMatchObject({ status: "succeeded", finalAnswer: "paid" });
      expect(Object.fromEntries(effects)).toEqual({ "inv-1": 1 });
      await expect(store.send(runId, { type: "guard.approve", callId: "call_0" })).rejects.toMatchObject({ problem: "finished_run" });
    });

    it("an edit the tool refuses leaves the call pending and a corrected decision is recorded and applied, as in process", async () => {
      await setup();
      const script: RunScript = { calls: [{ name: "pay", note: "inv-2" }], answer: "paid" };
      const runId = await store.submit({ agent: "approver", input: input(script) });
      await until(() => events.some((e) => e.type === "run.parked" && e.runId === runId), "the run to park");
      const refused = { type: "guard.approve" as const, callId: "call_0", args: { note: 42 } };
      expect(await store.send(runId, refused)).toBe(true);
      expect(await store.send(runId, refused)).toBe(false);
      // The run refuses it (note must be a string) and parks again, still waiting for the call.
      await until(() => events.filter((e) => e.type === "run.parked" && e.runId === runId).length >= 2, "the run to park again");
      expect((await store.status(runId)).pendingApprovals).toEqual([expect.objectContaining({ callId: "call_0" })]);
      expect(await store.send(runId, { type: "guard.approve", callId: "call_0", args: { note: "inv-2-fixed" } })).toBe(true);
      expect(await store.wait(runId)).toMatchObject({ status: "succeeded", finalAnswer: "paid" });
      expect(Object.fromEntries(effects)).toEqual({ "inv-2-fixed": 1 });
    });

    it("keeps a parked run's image once, apart from its checkpoint, and gives it back to the worker that resumes it", async () => {
      await setup();
      const script: RunScript = { calls: [{ name: "pay", note: "inv-photo" }], answer: "paid from the photo" };
      const photo = randomBytes(30_000).toString("base64");
      const messages = [scriptMessage(script), { role: "user" as const, content: [{ type: "text" as const, text: "The invoice:" }, { type: "image" as const, data: photo, mediaType: "image/jpeg" }] }];
      const runId = await store.submit({ agent: "approver", input: { messages } });
      await until(() => events.some((e) => e.type === "run.parked" && e.runId === runId), "the run to park");
      const saved = JSON.stringify(await store.load(runId));
      expect(saved).not.toContain(photo.slice(0, 200));
      const sha256 = /"blob":"sha256:([0-9a-f]{64})"/.exec(saved)?.[1];
      expect(sha256).toBeDefined();
      expect(await store.getBlob(runId, sha256!)).toEqual({ mediaType: "image/jpeg", data: photo });
      await store.send(runId, { type: "guard.approve", callId: "call_0" });
      expect(await store.wait(runId)).toMatchObject({ status: "succeeded", finalAnswer: "paid from the photo" });
      const withPhoto = server.requests.filter((request) => wireMediaOf(request.body).includes(`image_url: data:image/jpeg;base64,${photo}`));
      // Before the park, and after it: the resumed execution's request, restored from the checkpoint.
      expect(withPhoto).toHaveLength(2);
      expect((await store.delete(runId)) && (await store.getBlob(runId, sha256!))).toBeUndefined();
    });

    it("rejects and cancels parked runs", async () => {
      await setup();
      const rejected = await store.submit({ agent: "approver", input: input({ calls: [{ name: "pay", note: "r" }], answer: "not paid" }) });
      const cancelled = await store.submit({ agent: "approver", input: input({ calls: [{ name: "pay", note: "c" }], answer: "never" }) });
      await until(async () => (await store.status(rejected)).status === "awaitingApproval" && (await store.status(cancelled)).status === "awaitingApproval", "both to park");
      await expect(store.send(rejected, { type: "guard.approve", callId: "call_9" })).rejects.toMatchObject({ problem: "not_pending" });
      await store.send(rejected, { type: "guard.reject", callId: "call_0", reason: "over budget" });
      await store.send(cancelled, { type: "agent.cancel", reason: "user left" });
      const [r, c] = await Promise.all([store.wait(rejected), store.wait(cancelled)]);
      expect(r.status).toBe("succeeded");
      expect(JSON.stringify(r.messages)).toContain("over budget");
      expect(c).toMatchObject({ status: "failed", termination: { reason: "cancelled" } });
      expect(effects.size).toBe(0);
    });

    it("fires an approval deadline while no worker holds the run", async () => {
      await setup();
      const runId = await store.submit({ agent: "deadline", input: input({ calls: [{ name: "pay", note: "late" }], answer: "timed out" }) });
      await until(() => events.some((e) => e.type === "run.parked" && e.runId === runId), "the run to park");
      const parked = events.find((e) => e.type === "run.parked" && e.runId === runId);
      expect(parked).toMatchObject({ wakeAt: expect.any(Number) });
      const output = await store.wait(runId);
      expect(output.status).toBe("succeeded");
      expect(JSON.stringify(output.messages)).toMatch(/approval|timed out|time/i);
      expect(effects.size).toBe(0);
      // Claimed again after parking: by the deadline, with nobody's approval.
      expect(events.filter((e) => e.type === "run.claimed" && e.runId === runId).length).toBe(2);
    });

    it("queues a run for an agent no worker has registered yet; a store set to refuse them refuses it, writing nothing", async () => {
      store = await open();
      const early = await store.submit({ agent: "later", input: input({ calls: [], answer: "ran once a worker came" }) });
      expect(await store.status(early)).toMatchObject({ status: "queued", agent: "later" });
      events = [];
      const agents = makeAgents(jianmu, { baseURL: server.baseURL, journal: store, effect: () => undefined });
      worker = await startWorker({ store, agents: { later: agents.basic }, pollMs: 50, onEvent: (e) => events.push(e) });
      expect((await store.wait(early)).finalAnswer).toBe("ran once a worker came");
      await worker.stop();
      worker = undefined;
      await store.close();

      store = await open({ unknownAgents: "refuse" });
      await expect(store.submit({ agent: "nobody", input: {} })).rejects.toMatchObject({ problem: "unknown_agent", message: expect.stringContaining("no worker has connected") });
      await store.registerAgents(["basic"]);
      await expect(store.submit({ agent: "nobody", input: {} })).rejects.toMatchObject({ problem: "unknown_agent", message: expect.stringContaining("workers know: basic") });
      expect(await store.list({})).toEqual([]);

      // Ready means ready: once startWorker has resolved, its agents are known, so a submit right after it is
      // taken, even when registering is slow (a database far away: here 200 ms late).
      const slowToRegister = Object.create(store) as RunStore;
      slowToRegister.registerAgents = async (names) => {
        await new Promise((resolve) => setTimeout(resolve, 200));
        return store.registerAgents(names);
      };
      worker = await startWorker({ store: slowToRegister, agents: { greeter: agents.basic }, pollMs: 50, onEvent: (e) => events.push(e) });
      const ready = await store.submit({ agent: "greeter", input: input({ calls: [], answer: "taken at once" }) });
      expect((await store.wait(ready)).finalAnswer).toBe("taken at once");
    });

    it("refuses bad requests with errors that name the fix, writing nothing", async () => {
      await setup();
      await expect(store.submit({ agent: "basic", input: { messages: "hi" } as never })).rejects.toMatchObject({ problem: "invalid_input", message: expect.stringContaining("messages") });
      await expect(store.submit({ agent: "basic", runId: "has space" })).rejects.toMatchObject({ problem: "invalid_input", message: expect.stringContaining("runId") });
      await expect(store.send("no-such-run", { type: "agent.cancel" })).rejects.toMatchObject({ problem: "unknown_run", message: expect.stringContaining("no-such-run") });
      await expect(store.send("no-such-run", { type: "guard.approve" } as never)).rejects.toMatchObject({ problem: "invalid_input", message: expect.stringContaining("callId") });
      await expect(store.status("no-such-run")).rejects.toBeInstanceOf(RunQueueError);
      await expect(store.wait("no-such-run")).rejects.toMatchObject({ problem: "unknown_run" });
      expect(await store.list({})).toEqual([]);
    });

    it("holds inputs to the restore side's limits: at the limit a run parks and restores on approval; past it submit refuses, naming the field", async () => {
      await setup();
      const nest = (depth: number) => Array.from({ length: depth }).reduce<unknown>((inner) => ({ a: inner }), "leaf");
      // input → state → deep → 448 levels: the deepest object is at depth 449, the last the limit (450) allows.
      const runId = await store.submit({ agent: "approver", input: { ...input({ calls: [{ name: "pay", note: "deep" }], answer: "paid deep" }), state: { deep: nest(448) } } });
      await until(() => events.some((e) => e.type === "run.parked" && e.runId === runId), "the run to park");
      await store.send(runId, { type: "guard.approve", callId: "call_0" });
      // Claimed again and restored from its checkpoint: the depth the submit accepted, the restore accepts.
      expect(await store.wait(runId)).toMatchObject({ status: "succeeded", finalAnswer: "paid deep" });
      expect(events.filter((e) => e.type === "run.claimed" && e.runId === runId).map((e) => e.type === "run.claimed" && e.resumed)).toEqual([false, true]);

      const refused = (state: Record<string, unknown>, content = "hi") => store.submit({ agent: "approver", input: { messages: [{ role: "user", content }], state } });
      await expect(refused({ deep: nest(449) })).rejects.toMatchObject({ problem: "invalid_input", message: expect.stringMatching(/^submit: input\.state\.deep is refused: it is nested more than 450 levels deep \(the limits are 450 levels/) });
      // Far deeper: still a RunQueueError, not a stack overflow.
      await expect(refused({ deep: nest(50_000) })).rejects.toMatchObject({ problem: "invalid_input" });
      await expect(refused({ count: 10n })).rejects.toMatchObject({ problem: "invalid_input", message: expect.stringMatching(/input\.state\.count is refused: it is a BigInt/) });
      const huge = "x".repeat(16 * 1024 * 1024 + 1);
      await expect(refused({}, huge)).rejects.toMatchObject({ problem: "invalid_input", message: expect.stringMatching(/^submit: input\.messages.* more than 16777216 characters/) });
      await expect(store.send(runId, { type: "guard.reject", callId: "call_0", reason: huge })).rejects.toMatchObject({ problem: "invalid_input", message: expect.stringContaining("send: command") });
      expect((await store.list({})).map((r) => r.runId)).toEqual([runId]);
    });

    it("fences: a write carrying an old token is refused, stops the holder, and changes nothing", async () => {
      const agents = await setup({ leaseMs: 200 });
      await worker!.stop();
      worker = undefined;
      const runId = await store.submit({ agent: "basic", input: input({ calls: [], answer: "x" }) });
      const [first] = await store.claim({ owner: "A", agents: ["basic"], limit: 1, leaseMs: 200 });
      expect(first).toMatchObject({ runId, token: expect.any(Number) });
      let lostBy: Error | undefined;
      store.fence(runId, first!.token, (error) => (lostBy = error));
      // While A's lease holds, nobody else can claim.
      expect(await store.claim({ owner: "B", agents: ["basic"], limit: 1, leaseMs: 5_000 })).toEqual([]);
      await new Promise((resolve) => setTimeout(resolve, 300));
      const [second] = await store.claim({ owner: "B", agents: ["basic"], limit: 1, leaseMs: 5_000 });
      expect(second!.token).toBeGreaterThan(first!.token);
      // Reads of the journal are fenced too: a paused holder must not replay the new owner's outcomes as its own.
      await expect(Promise.resolve().then(() => store.lookup({ runId, iteration: 0, callId: "c" }))).rejects.toBeInstanceOf(FencedError);
      expect(lostBy).toBeInstanceOf(FencedError);
      await expect(Promise.resolve().then(() => store.started({ runId, iteration: 0, callId: "c" }, "record"))).rejects.toBeInstanceOf(FencedError);
      expect(await store.lookup({ runId, iteration: 0, callId: "c" })).toBeUndefined();
      expect(await store.renew(runId, first!.token, 1_000)).toBe(false);
      expect(await store.finish(runId, first!.token, { status: "succeeded" } as never)).toBe(false);
      // A finish carrying the last checkpoint is refused whole: no checkpoint either.
      const last = persistAgent(createActor(agents.basic, { input: { messages: [], runId } }));
      expect(await store.finish(runId, first!.token, { status: "succeeded" } as never, last)).toBe(false);
      expect(await store.load(runId)).toBeUndefined();
      expect((await store.status(runId)).owner).toBe("B");
      store.unfence(runId);
    });

    if (finishAndClaim) it("finishAndClaim: claims the due runs for the freed slot only once the finish is written, never the finished run", async () => {
      const agents = await setup();
      await worker!.stop();
      worker = undefined;
      expect(store.finishAndClaim).toBeTypeOf("function");
      const first = await store.submit({ agent: "basic", input: input({ calls: [], answer: "one" }) });
      const [held] = await store.claim({ owner: "A", agents: ["basic"], limit: 1, leaseMs: 5_000 });
      expect(held!.runId).toBe(first);
      store.fence(first, held!.token, () => undefined);
      const next = await store.submit({ agent: "basic", input: input({ calls: [], answer: "two" }) });
      const request = { owner: "A", agents: ["basic"], limit: 2, leaseMs: 5_000 };
      const last = persistAgent(createActor(agents.basic, { input: { messages: [], runId: first } }));
      // Under a stale token the finish is refused whole, and nothing is claimed with it.
      expect(await store.finishAndClaim!(first, held!.token - 1, failedOutput(first, "stale"), last, request)).toEqual({ finished: false, claimed: [] });
      expect((await store.status(next)).status).toBe("queued");
      const done = await store.finishAndClaim!(first, held!.token, failedOutput(first, "done"), last, request);
      expect(done.finished).toBe(true);
      expect(done.claimed.map((run) => run.runId)).toEqual([next]);
      expect(await store.status(next)).toMatchObject({ status: "running", owner: "A" });
      expect(await store.status(first)).toMatchObject({ status: "failed" });
      expect((await store.wait(first)).termination?.error?.message).toBe("done");
      store.unfence(first);
    });

    it("hands in-flight runs over on a graceful stop; another worker finishes them", async () => {
      await setup({ concurrency: 2 });
      const runId = await store.submit({ agent: "basic", input: input({ calls: [{ name: "record", note: "g1", sleepMs: 300 }, { name: "record", note: "g2" }], answer: "handed over", modelDelayMs: 50 }) });
      await until(() => events.some((e) => e.type === "agent.event" && e.runId === runId && e.event.type === "tool.call.started"), "the first tool call");
      await worker!.stop();
      expect(events.filter((e) => e.type !== "agent.event").map((e) => e.type)).toEqual(["worker.started", "run.claimed", "run.released", "worker.stopped"]);
      expect(effects.get("g1")).toBe(1);
      const agents = makeAgents(jianmu, { baseURL: server.baseURL, journal: store, effect: (note) => void effects.set(note, (effects.get(note) ?? 0) + 1) });
      worker = await startWorker({ store, agents, pollMs: 50, leaseMs: 5_000 });
      const output = await store.wait(runId);
      expect(output.finalAnswer).toBe("handed over");
      expect(Object.fromEntries(effects)).toEqual({ g1: 1, g2: 1 });
    });

    it("writes no checkpoint that would only repeat a fresh run's input (its first model call); the ones after it are written", async () => {
      await setup({ concurrency: 1 });
      const runId = await store.submit({ agent: "basic", input: input({ calls: [{ name: "record", note: "f1" }], answer: "checkpointed later", modelDelayMs: 500 }) });
      const modelCalls = () => events.filter((e) => e.type === "agent.event" && e.runId === runId && e.event.type === "model.call.started").length;
      await until(() => modelCalls() === 1, "the first model call");
      // Well into the call, where a checkpoint written on entering it would be stored by now: the submit holds everything it would (queue/fresh-start.ts).
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(modelCalls()).toBe(1);
      expect(await store.load(runId)).toBeUndefined();
      await until(() => modelCalls() === 2, "the second model call");
      // The second call's checkpoint is written (it may still be on its way when the call starts).
      await until(async () => (await store.load(runId))?.iteration === 1, "the second model call's checkpoint");
      expect(await store.load(runId)).toMatchObject({ iteration: 1, status: "running" });
      expect(await store.wait(runId)).toMatchObject({ status: "succeeded", finalAnswer: "checkpointed later" });
      expect(Object.fromEntries(effects)).toEqual({ f1: 1 });
    });

    // Registered only where there are signals to be selective about.
    if (signals) it("reads the inbox only of the run a signal names: new runs queued behind held ones cost the held ones nothing", async () => {
      // A long lease: no heartbeat reads an inbox during the test.
      await setup({ concurrency: 2, leaseMs: 60_000 });
      const held: string[] = [];
      for (const note of ["h1", "h2"]) {
        held.push(await store.submit({ agent: "basic", input: input({ calls: [{ name: "record", note, sleepMs: 1_500 }], answer: "done" }) }));
      }
      for (const runId of held) {
        await until(() => events.some((e) => e.type === "agent.event" && e.runId === runId && e.event.type === "tool.call.started"), `${runId}'s tool call`);
      }
      const reads: string[] = [];
      const inbox = store.inbox.bind(store);
      store.inbox = (runId, afterId) => (reads.push(runId), inbox(runId, afterId));
      // Six runs wait for a slot: each submit signals, and no held run needs to look at its inbox for them.
      for (let i = 0; i < 6; i++) await store.submit({ agent: "basic", input: input({ calls: [], answer: `queued ${i}` }) });
      // A cancel for the first held run: signalled after the submits, so by its read every earlier signal was handled.
      expect(await store.send(held[0]!, { type: "agent.cancel", reason: "test" })).toBe(true);
      await until(() => reads.includes(held[0]!), "the cancelled run's inbox read", 5_000);
      expect(reads.filter((runId) => runId === held[1])).toEqual([]);
      expect(await store.wait(held[0]!)).toMatchObject({ status: "failed", termination: { reason: "cancelled" } });
      expect((await store.wait(held[1]!)).status).toBe("succeeded");
    });

    it("runs a thread's runs one after the other, each from the thread's conversation; a second submit while one runs is refused", async () => {
      await setup();
      const first = await store.submit({ agent: "basic", runId: "thread-1", input: { ...input({ calls: [{ name: "record", note: "t1" }], answer: "first answer" }), threadId: "chat" } });
      await expect(store.submit({ agent: "basic", input: { messages: [{ role: "user", content: "too soon" }], threadId: "chat" } })).rejects.toThrow(/thread chat is busy: its run thread-1/);
      expect((await store.wait(first)).finalAnswer).toBe("first answer");
      const second = await store.submit({ agent: "basic", runId: "thread-2", input: { messages: [{ role: "user", content: "and now?" }], threadId: "chat" } });
      const output = await store.wait(second);
      // The loopback model answers from the thread's first message (its script, already done): the run saw the whole thread.
      expect(output.messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant", "user", "assistant"]);
      expect(output.messages[4]).toEqual({ role: "user", content: "and now?" });
      const thread = await loadThread(store, "chat");
      expect(thread).toEqual({ threadId: "chat", messages: output.messages, runs: ["thread-1", "thread-2"] });
      expect(Object.fromEntries(effects)).toEqual({ t1: 1 });
    });

    it("keeps NUL and unpaired surrogates exactly, in input, model answers, tool results, call ids and reasons", async () => {
      await setup();
      // What any web page or file a tool reads may carry: a NUL, a lone low surrogate, a high one cut from its pair.
      const odd = "nul\u0000 low\udc00 high\ud83d end";
      const script = input({ calls: [{ name: "record", note: odd, id: `call\u0000${odd}` }], answer: `answer ${odd}` });
      const runId = await store.submit({ agent: "basic", input: { messages: [...script.messages, { role: "user", content: `input ${odd}` }] } });
      const output = await store.wait(runId);
      expect(output).toMatchObject({ status: "succeeded", finalAnswer: `answer ${odd}` });
      expect(output.messages[1]!.content).toBe(`input ${odd}`);
      expect(output.messages.find((m) => m.role === "tool")).toMatchObject({ content: `recorded ${odd}`, toolCallId: `call\u0000${odd}` });
      expect(Object.fromEntries(effects)).toEqual({ [odd]: 1 });
      expect(await store.lookup({ runId, iteration: 0, callId: `call\u0000${odd}` })).toMatchObject({ state: "completed", outcome: { content: `recorded ${odd}` } });

      // Parked with such arguments, rejected with such a reason, under such a call id.
      const parked = await store.submit({ agent: "approver", input: input({ calls: [{ name: "pay", note: odd, id: `pay\u0000${odd}` }], answer: "not paid" }) });
      await until(() => events.some((e) => e.type === "run.parked" && e.runId === parked), "the run to park");
      const { pendingApprovals } = await store.status(parked);
      expect(pendingApprovals).toEqual([expect.objectContaining({ callId: `pay\u0000${odd}`, arguments: JSON.stringify({ note: odd }) })]);
      expect(await store.send(parked, { type: "guard.reject", callId: `pay\u0000${odd}`, reason: `no ${odd}` })).toBe(true);
      const rejected = await store.wait(parked);
      expect(rejected.messages.find((m) => m.role === "tool")?.content).toContain(`no ${odd}`);
      expect(effects.has(`pay:${odd}`)).toBe(false);
    });

    it("reports a run parked only once its worker has released it (owner gone), not while its checkpoint says so", async () => {
      await setup();
      const runId = await store.submit({ agent: "approver", input: input({ calls: [{ name: "pay", note: "held" }], answer: "paid" }) });
      const seen: { status: string; owner?: string }[] = [];
      await until(async () => {
        const now = await store.status(runId);
        seen.push({ status: now.status, ...(now.owner ? { owner: now.owner } : {}) });
        return events.some((e) => e.type === "run.parked" && e.runId === runId);
      }, "the run to park");
      expect(seen.filter((s) => s.status === "awaitingApproval" && s.owner !== undefined)).toEqual([]);
      expect(await store.status(runId)).toMatchObject({ status: "awaitingApproval", pendingApprovals: [expect.objectContaining({ callId: "call_0" })] });
      expect((await store.status(runId)).owner).toBeUndefined();
      await store.send(runId, { type: "guard.approve", callId: "call_0" });
      expect((await store.wait(runId)).finalAnswer).toBe("paid");
    });

    it("drops into runAgent as its checkpoint store and tool journal", async () => {
      await setup();
      const agents = makeAgents(jianmu, { baseURL: server.baseURL, journal: store, effect: (note) => void effects.set(note, (effects.get(note) ?? 0) + 1) });
      const output = await runAgent(agents.basic, { runId: "plain-run", ...input({ calls: [{ name: "record", note: "p" }], answer: "plain" }) }, { checkpoints: store });
      expect(output.finalAnswer).toBe("plain");
      const saved = await store.load("plain-run");
      expect(saved).toMatchObject({ runId: "plain-run", status: "succeeded" });
      expect(await store.lookup({ runId: "plain-run", iteration: 0, callId: "call_0" })).toMatchObject({ state: "completed" });
      expect(await store.started({ runId: "plain-run", iteration: 0, callId: "call_0" }, "record")).toBe(false);
      expect(await store.started({ runId: "plain-run", iteration: 5, callId: "call_0" }, "record")).toBe(true);
      // The first recorded outcome wins: a later "unknown" from a losing copy never replaces it.
      const recorded = await store.lookup({ runId: "plain-run", iteration: 0, callId: "call_0" });
      await store.completed({ runId: "plain-run", iteration: 0, callId: "call_0" }, { callId: "call_0", name: "record", status: "error", errorKind: "outcome_unknown", content: "unknown", effectTags: [] });
      expect(await store.lookup({ runId: "plain-run", iteration: 0, callId: "call_0" })).toEqual(recorded);
      expect((await store.list()).map((s) => s.runId)).toContain("plain-run");
      expect(await store.delete("plain-run")).toBe(true);
      expect(await store.load("plain-run")).toBeUndefined();
    });
  });
}
