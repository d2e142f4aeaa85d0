import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { RunStore } from "../../queue/run-store.js";
import { MemoryRunStore } from "../../queue/memory-store.js";
import { SqliteRunStore } from "../../sqlite.js";
import { ErrorBodySchema } from "../../web/protocol.js";
import { postJson, startReplica, startStack, TASK, scratchPerTest } from "./helpers.js";
import { paymentsAgent } from "./queue-helpers.js";
import { threadAuthorize, threadRefusals, twoRunsOnOneThread } from "./thread-scenario.js";

const { temp, cleanups } = scratchPerTest();

/** Replica a runs the embedded worker; replica b only serves HTTP, on its own connection to the same store. */
async function twoReplicas(storeA: RunStore, storeB: RunStore, asked: string[]) {
  const agentA = await paymentsAgent(storeA);
  const agentB = await paymentsAgent(storeB);
  const authorize = threadAuthorize(asked);
  const a = await startReplica({ agents: agentA.agents, store: storeA, authorize });
  const b = await startReplica({ agents: agentB.agents, store: storeB, worker: false, authorize });
  cleanups.push(() => agentA.model.close(), () => agentB.model.close(), () => storeA.close(), () => (storeB === storeA ? undefined : storeB.close()), () => a.stop(), () => b.stop());
  return { a, b, payments: agentA.payments };
}

describe("threads over HTTP on a run store", () => {
  it("SqliteRunStore, two replicas: two runs on one thread started on A, approved and read on B; the listing shows both runs and the whole conversation", async () => {
    const path = join(temp.dir, "threads.db");
    const asked: string[] = [];
    const { a, b, payments } = await twoReplicas(new SqliteRunStore({ path }), new SqliteRunStore({ path }), asked);
    await twoRunsOnOneThread(a.base, b.base, payments);
    await threadRefusals(b.base);
    // authorize is asked with the thread for the starts on it and for each read of it.
    expect(asked).toEqual(expect.arrayContaining(["alice:start:payments:alice-chat", "alice:read:payments:alice-chat", "mallory:read:payments:alice-chat", "anonymous:read:payments:alice-chat", "mallory:start:payments:alice-chat"]));
    expect(asked.some((entry) => entry.includes("nobody-chat"))).toBe(false);
  });

  it("MemoryRunStore: two handlers on one store in one process serve the thread the same way", async () => {
    const store = new MemoryRunStore();
    const { a, b, payments } = await twoReplicas(store, store, []);
    await twoRunsOnOneThread(a.base, b.base, payments);
    await threadRefusals(b.base);
  });
});

describe("threads over HTTP with runs held in process", () => {
  it("a checkpoint store (the default SQLite file): the same listing, read from the store", async () => {
    const stack = await startStack(join(temp.dir, "in-process.db"), { authorize: threadAuthorize([]) });
    cleanups.push(() => stack.stop());
    await twoRunsOnOneThread(stack.base, stack.base, stack.payments);
    await threadRefusals(stack.base);
  });

  it("store: false keeps no threads: a start on a thread is a 400 naming threadId, a read a 404 saying why", async () => {
    const agent = await paymentsAgent(new MemoryRunStore());
    const replica = await startReplica({ agents: agent.agents, store: false });
    cleanups.push(() => agent.model.close(), () => replica.stop());
    const started = await postJson(`${replica.base}/runs`, { agent: "payments", message: TASK, threadId: "chat-1" });
    const startError = ErrorBodySchema.parse(await started.json()).error;
    expect({ status: started.status, code: startError.code, field: startError.field }).toEqual({ status: 400, code: "invalid_body", field: "threadId" });
    const read = await fetch(`${replica.base}/threads/chat-1`);
    const readError = ErrorBodySchema.parse(await read.json()).error;
    expect({ status: read.status, code: readError.code }).toEqual({ status: 404, code: "unknown_thread" });
    expect(readError.message).toContain("store: false");
  });
});
