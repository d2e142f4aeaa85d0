import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { SqliteRunStore } from "../../queue/sqlite/store.js";
import { DUE_RUNS_OF_AGENT } from "../../queue/sqlite/statements.js";

const dir = mkdtempSync(join(tmpdir(), "jianmu-sqlite-claim-"));
const stores: SqliteRunStore[] = [];
afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
});
process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
const open = (path: string) => {
  const store = new SqliteRunStore({ path });
  stores.push(store);
  return store;
};

/**
 * SQLite's claim reads due runs alone, in the order it takes them, as PostgreSQL's does: runs parked
 * for a person and a backlog of queued runs cost a claim (and every worker's poll) nothing. A `send`
 * makes its run due; a file of layout 2, whose claim looked at the inbox instead, is brought to
 * layout 3 when opened, its runs with an event waiting made due.
 */
describe("SqliteRunStore: the claim beside parked runs and a backlog", () => {
  it("plans each agent's claim as a search of the claimable index in its order: no scan, no sort", async () => {
    const path = join(dir, "plan.db");
    const store = open(path);
    await store.registerAgents(["basic", "approver"]);
    const raw = new Database(path);
    try {
      // 5,000 runs parked for a person and 5,000 queued, beside 1,000 finished.
      raw.exec(`WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 5000)
        INSERT INTO jianmu_runs (run_id, agent, input, status, wake_at, created_at, updated_at)
        SELECT 'p' || n, 'approver', '{}', 'awaitingApproval', NULL, n, n FROM g
        UNION ALL SELECT 'q' || n, 'basic', '{}', 'queued', 1000 + n, n, n FROM g
        UNION ALL SELECT 'f' || n, 'basic', '{}', 'succeeded', NULL, n, n FROM g WHERE n <= 1000`);
      raw.exec("ANALYZE");
      const plan = (raw.prepare(`EXPLAIN QUERY PLAN ${DUE_RUNS_OF_AGENT}`).all("basic", Date.now(), Date.now(), 4) as { detail: string }[]).map((row) => row.detail);
      expect(plan.some((line) => /SEARCH r USING INDEX jianmu_runs_claimable \(agent=\? AND wake_at<\?\)/.test(line))).toBe(true);
      expect(plan.filter((line) => /^SCAN r\b|TEMP B-TREE/.test(line))).toEqual([]);
    } finally {
      raw.close();
    }
    const claimed = await store.claim({ owner: "w", agents: ["approver", "basic"], limit: 3, leaseMs: 60_000 });
    expect(claimed.map((run) => run.runId)).toEqual(["q1", "q2", "q3"]);
  });

  it("a send makes a parked run due at once; its deadline alone does not before it comes", async () => {
    const path = join(dir, "send.db");
    const store = open(path);
    await store.registerAgents(["approver"]);
    const runId = await store.submit({ agent: "approver", input: { messages: [] } });
    const [held] = await store.claim({ owner: "w", agents: ["approver"], limit: 1, leaseMs: 60_000 });
    expect(held!.runId).toBe(runId);
    // Parked with a deadline an hour away, and a pending call.
    await store.park(runId, held!.token, Date.now() + 3_600_000);
    expect(await store.claim({ owner: "w", agents: ["approver"], limit: 1, leaseMs: 60_000 })).toEqual([]);
    const raw = new Database(path);
    raw.prepare(`UPDATE jianmu_runs SET pending = ? WHERE run_id = ?`).run(JSON.stringify([{ callId: "c1", name: "pay", arguments: "{}" }]), runId);
    raw.close();
    expect(await store.send(runId, { type: "guard.approve", callId: "c1" })).toBe(true);
    const [due] = await store.claim({ owner: "w2", agents: ["approver"], limit: 1, leaseMs: 60_000 });
    expect(due).toMatchObject({ runId, inboxEmpty: false });
  });

  it("brings a layout-2 file to layout 3: a run with an event waiting and no wake_at is due, and the index holds the claim's order", async () => {
    const path = join(dir, "layout2.db");
    const store = open(path);
    await store.registerAgents(["approver"]);
    const runId = await store.submit({ agent: "approver", input: { messages: [] } });
    await store.close();
    stores.length = 0;
    // As layout 2 left such a run: parked without a deadline, an approval in its inbox, wake_at untouched.
    const raw = new Database(path);
    raw.exec(`DROP INDEX jianmu_runs_claimable; CREATE INDEX jianmu_runs_claimable ON jianmu_runs (agent, wake_at) WHERE status IN ('queued', 'running', 'awaitingApproval');
      UPDATE jianmu_queue_meta SET value = '2' WHERE key = 'layout'; PRAGMA user_version = 2;`);
    raw.prepare(`UPDATE jianmu_runs SET status = 'awaitingApproval', wake_at = NULL WHERE run_id = ?`).run(runId);
    raw.prepare(`INSERT INTO jianmu_inbox (run_id, dedupe_key, command, created_at) VALUES (?, 'approve:c1', '{"type":"guard.approve","callId":"c1"}', 1)`).run(runId);
    raw.close();

    const reopened = open(path);
    const [due] = await reopened.claim({ owner: "w", agents: ["approver"], limit: 1, leaseMs: 60_000 });
    expect(due).toMatchObject({ runId, inboxEmpty: false });
    const after = new Database(path);
    try {
      expect(after.pragma("user_version", { simple: true })).toBe(3);
      expect(after.prepare("SELECT value FROM jianmu_queue_meta WHERE key = 'layout'").get()).toEqual({ value: "3" });
      const index = after.prepare("SELECT sql FROM sqlite_master WHERE name = 'jianmu_runs_claimable'").get() as { sql: string };
      expect(index.sql).toContain("(agent, wake_at, created_at)");
    } finally {
      after.close();
    }
  });
});
