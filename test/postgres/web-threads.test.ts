import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostgresRunStore } from "../../queue/postgres/store.js";
import { paymentsAgent } from "../web/queue-helpers.js";
import { startReplica, type Replica } from "../web/helpers.js";
import { threadAuthorize, threadRefusals, twoRunsOnOneThread } from "../web/thread-scenario.js";
import { freshDatabase } from "./database.js";

/**
 * Threads over HTTP on real PostgreSQL: two handler replicas, each with its own connection pool to the
 * same schema; A runs the embedded worker, B only serves HTTP. Two runs on one thread started on A,
 * approved (an edit refused with 422, then the corrected one) and listed on B.
 */
let database: Awaited<ReturnType<typeof freshDatabase>>;
const closers: (() => Promise<void>)[] = [];

beforeAll(async () => {
  database = await freshDatabase("jianmu_web_threads");
}, 60_000);

afterAll(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  await database?.drop();
});

async function replica(worker: boolean, asked: string[]): Promise<{ replica: Replica; payments: { invoice: string; amountEur: number }[] }> {
  const store = await PostgresRunStore.connect({ connectionString: database.url, schema: "threads" });
  const agent = await paymentsAgent(store);
  const started = await startReplica({ agents: agent.agents, store, worker, authorize: threadAuthorize(asked), streamPollMs: 100 });
  closers.push(() => store.close(), () => agent.model.close(), () => started.stop());
  return { replica: started, payments: agent.payments };
}

describe("threads over HTTP on PostgreSQL, two replicas", () => {
  it("two runs on one thread through A, read from B: both runs and the whole conversation; a refused edit is a 422 and its correction goes through", async () => {
    const asked: string[] = [];
    const a = await replica(true, asked);
    const b = await replica(false, asked);
    await twoRunsOnOneThread(a.replica.base, b.replica.base, a.payments);
    await threadRefusals(b.replica.base);
    expect(asked).toEqual(expect.arrayContaining(["alice:start:payments:alice-chat", "alice:read:payments:alice-chat", "mallory:read:payments:alice-chat"]));
  });
});
