import { describe, expect, it } from "vitest";
import { MemoryRunStore } from "../../queue/memory-store.js";
import type { ClaimedRun } from "../../queue/schemas.js";
import { startWorker } from "../../queue/worker.js";
import { makeAgents } from "./fixture-agents.mjs";
import { jianmu } from "./fixture-jianmu.js";

/**
 * A signal that comes while the worker's claim is on its way (the run committed after the claim
 * looked) must still wake the worker once that claim returns empty-handed: otherwise the run waits
 * for the next poll (a second by default; the bench's submit → first call once read 1.1 s at p99).
 */
describe("startWorker's wake-ups", () => {
  it("claims a run signalled during an empty claim at once, not at the next poll", async () => {
    const store = new MemoryRunStore();
    const claim = store.claim.bind(store);
    const returned: ClaimedRun[][] = [];
    let submitted: string | undefined;
    store.claim = async (request) => {
      const claimed = await claim(request);
      // The first claim found the queue empty; a run is submitted (and signalled) before it returns.
      submitted ??= await store.submit({ agent: "basic", input: { messages: [{ role: "user", content: "hi" }] } });
      returned.push(claimed);
      return claimed;
    };
    const agents = makeAgents(jianmu, { baseURL: "http://127.0.0.1:9/v1", journal: store, effect: () => undefined });
    const worker = await startWorker({ store, agents, concurrency: 1, pollMs: 60_000 });
    try {
      await expect.poll(() => submitted !== undefined && returned.flat().some((run) => run.runId === submitted), { timeout: 5_000 }).toBe(true);
      expect(returned[0]).toEqual([]);
    } finally {
      await worker.stop({ timeoutMs: 1_000 });
    }
  });
});
