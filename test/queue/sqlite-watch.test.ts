import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { QueueSignal } from "../../queue/run-store.js";
import { SqliteRunStore } from "../../queue/sqlite/store.js";

const dir = mkdtempSync(join(tmpdir(), "jianmu-sqlite-watch-"));
const stores: SqliteRunStore[] = [];
afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
});
process.on("exit", () => rmSync(dir, { recursive: true, force: true }));

const open = (path: string, watchMs = 5) => {
  const store = new SqliteRunStore({ path, watchMs });
  stores.push(store);
  return store;
};
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("SqliteRunStore: what other processes write is told as `changed`", () => {
  it("tells a subscriber when another connection commits, not for its own commits, and stops watching once nobody subscribes", async () => {
    const path = join(dir, "watched.db");
    const here = open(path);
    const there = open(path);
    const told: QueueSignal[] = [];
    const unsubscribe = here.subscribe((signal) => told.push(signal));
    await here.submit({ agent: "basic", input: { messages: [] }, runId: "mine" });
    await sleep(40);
    // Its own submit is told at once, as a runnable run; no `changed` for it.
    expect(told).toEqual([{ kind: "runnable", runId: "mine" }]);
    await there.submit({ agent: "basic", input: { messages: [] }, runId: "theirs" });
    await sleep(40);
    expect(told.filter((signal) => signal.kind === "changed")).toHaveLength(1);
    unsubscribe();
    await there.submit({ agent: "basic", input: { messages: [] }, runId: "later" });
    await sleep(40);
    expect(told.filter((signal) => signal.kind === "changed")).toHaveLength(1);
  });

  it("a wait in one process learns of a finish written by another within the watch, long before its poll", async () => {
    const path = join(dir, "waits.db");
    const waiter = new SqliteRunStore({ path, watchMs: 5, pollMs: 60_000 });
    stores.push(waiter);
    const worker = open(path);
    await worker.submit({ agent: "basic", input: { messages: [] }, runId: "r1" });
    const waiting = waiter.wait("r1");
    await sleep(30);
    const [claimed] = await worker.claim({ owner: "w", agents: ["basic"], limit: 1, leaseMs: 5_000 });
    expect(await worker.finish("r1", claimed!.token, { status: "succeeded", finalAnswer: "ok", messages: [], rounds: 1, usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 }, toolEffects: [], iterations: 1, runId: "r1", state: {} })).toBe(true);
    // Its poll is a minute away, past the test's timeout: only the watch can tell it in time.
    expect(await waiting).toMatchObject({ status: "succeeded", finalAnswer: "ok" });
  });
});
