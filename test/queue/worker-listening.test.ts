import { describe, expect, it } from "vitest";
import { MemoryRunStore } from "../../queue/memory-store.js";
import { startWorker } from "../../queue/worker.js";
import type { WorkerEvent } from "../../queue/worker-events.js";
import { makeAgents } from "./fixture-agents.mjs";
import { jianmu } from "./fixture-jianmu.js";


/**
 * A store that listens over a connection of its own (PostgreSQL's LISTEN) signals every held run to
 * look at its inbox when that connection comes up. The worker starts, and claims, only once the store
 * says it listens (`untilListening`), so that signal comes before any run is held.
 */
describe("startWorker and a store's untilListening", () => {
  it("reports worker.started and claims only after the store listens", async () => {
    const store = new MemoryRunStore({ pollMs: 20 });
    let listen: () => void = () => undefined;
    const listening = new Promise<void>((resolve) => (listen = resolve));
    const order: string[] = [];
    Object.assign(store, {
      untilListening: () => listening.then(() => void order.push("listening")),
    });
    const claim = store.claim.bind(store);
    store.claim = (request) => (order.push("claim"), claim(request));
    const agents = makeAgents(jianmu, { baseURL: "http://127.0.0.1:9/v1", journal: store, effect: () => undefined });
    const events: WorkerEvent[] = [];
    let started = false;
    const starting = startWorker({ store, agents, concurrency: 1, pollMs: 20, onEvent: (event) => events.push(event) }).then((worker) => ((started = true), worker));
    // The agents are registered, yet nothing starts while the store does not listen.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(started).toBe(false);
    expect(events.map((e) => e.type)).not.toContain("worker.started");
    expect(order).toEqual([]);
    listen();
    const worker = await starting;
    expect(events.map((e) => e.type)).toContain("worker.started");
    await expect.poll(() => order.includes("claim")).toBe(true);
    expect(order[0]).toBe("listening");
    await worker.stop();
  });
});
