import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { SqliteRunStore } from "../../sqlite.js";
import type { AgentHandler } from "../../http.js";
import { handlerStats } from "../../web/server/handler-stats.js";
import { EventReader, postJson, startReplica, startStack, TASK, scratchPerTest } from "./helpers.js";
import { paymentsAgent } from "./queue-helpers.js";

const { temp, cleanups } = scratchPerTest();

const IDLE = 1_000;

/**
 * 1,000 pages follow a parked run and then all go away: the handler lets go of every follower,
 * listener and heartbeat timer it held for them (counted, not timed), and the run is untouched: it
 * finishes once approved.
 */
async function idleStreamsGoAway(base: string, handler: AgentHandler, onStore: boolean): Promise<string> {
  const started = await postJson(`${base}/runs`, { agent: "payments", message: TASK });
  const runId = started.headers.get("x-run-id")!;
  const first = new EventReader(started);
  const requested = await first.until("approval.requested");
  const idle = await Promise.all(Array.from({ length: IDLE }, () => fetch(`${base}/runs/${runId}/stream`, { headers: { "last-event-id": requested.id } })));
  expect(idle.every((response) => response.status === 200)).toBe(true);
  await expect.poll(() => handlerStats(handler)!.streams, { timeout: 20_000 }).toBe(IDLE + 1);
  // What they hold while open: one reader of the store for all of them, or one log listener each.
  const open = onStore ? { logFollowers: 0, followedRuns: 1, storeFollowers: IDLE + 1, storeListening: true } : { logFollowers: IDLE + 1, followedRuns: 0, storeFollowers: 0, storeListening: false };
  expect(handlerStats(handler)).toEqual({ streams: IDLE + 1, ...open });

  await Promise.all(idle.map((response) => response.body!.cancel()));
  await first.close();
  await expect.poll(() => handlerStats(handler), { timeout: 20_000 }).toEqual({ streams: 0, logFollowers: 0, followedRuns: 0, storeFollowers: 0, storeListening: false });

  expect((await postJson(`${base}/runs/${runId}/events`, { type: "guard.approve", callId: requested.type === "approval.requested" ? requested.data.callId : "" })).status).toBe(202);
  return runId;
}

describe("1,000 idle streams that all go away", () => {
  it("on a run store: the followers, the store subscription and the poll timer go back to none; the run finishes on its worker", async () => {
    const store = new SqliteRunStore({ path: join(temp.dir, "idle.db") });
    const agent = await paymentsAgent(store);
    const replica = await startReplica({ agents: agent.agents, store });
    cleanups.push(() => agent.model.close(), () => store.close(), () => replica.stop());
    const runId = await idleStreamsGoAway(replica.base, replica.handler, true);
    expect((await store.wait(runId)).status).toBe("succeeded");
    expect(agent.payments).toEqual([{ invoice: "INV-1042", amountEur: 1250 }]);
  }, 90_000);

  it("with runs held in process: the run log's listeners go back to none; the run finishes", async () => {
    const stack = await startStack(join(temp.dir, "idle-in-process.db"));
    cleanups.push(() => stack.stop());
    await idleStreamsGoAway(stack.base, stack.handler, false);
    await expect.poll(() => stack.payments, { timeout: 10_000 }).toEqual([{ invoice: "INV-1042", amountEur: 1250 }]);
  }, 90_000);
});
