import { beforeAll, describe, expect, it } from "vitest";
import { storeWithAdmin } from "./database.js";
import { claimScans } from "./plans.js";

/**
 * A backlog: many runs queued and due at once (a burst of submits, workers down for a while). Every
 * claim, and the claim that rides on each finish, takes the oldest few: it must stop there, not read
 * and sort the whole backlog (a claim beside 5,000 queued runs read all 5,000 and sorted them, 6 ms,
 * and a worker draining the backlog paid that at every finish). Plans are asserted, not timings.
 */
describe("PostgreSQL run queue: a claim beside a backlog of 5,000 due runs", () => {
  const fixture = storeWithAdmin("backlog");

  beforeAll(async () => {
    const { admin, store } = fixture;
    await store.registerAgents(["basic", "approver"]);
    // Due in the order of their number, some sharing a wake_at (submits in the same ms), told apart by created_at.
    await admin.query(`INSERT INTO backlog.runs (run_id, agent, input, status, wake_at, created_at, updated_at)
      SELECT 'q' || g, CASE WHEN g % 5 = 0 THEN 'approver' ELSE 'basic' END, '{}', 'queued', 1000 + g / 3, 1000 + g, 1000 + g FROM generate_series(1, 5000) g`);
    await admin.query("ANALYZE backlog.runs");
  });

  const explainClaim = (agents: string[], limit: number) => claimScans(fixture.admin, "backlog", agents, limit);

  it("reads a few rows per agent through runs_due, for one agent or several, never the backlog", async () => {
    for (const agents of [["basic"], ["basic", "approver"], ["approver", "basic", "absent"]]) {
      const scans = await explainClaim(agents, 4);
      expect(scans.some((scan) => scan.type === "Seq Scan")).toBe(false);
      expect(scans.find((scan) => scan.index === "runs_due")).toBeDefined();
      expect(scans.reduce((sum, scan) => sum + scan.examined, 0)).toBeLessThanOrEqual(20 * agents.length);
    }
  });

  it("takes the oldest due runs first, across agents, by wake_at and then by created_at", async () => {
    const first = await fixture.store.claim({ owner: "w1", agents: ["basic", "approver"], limit: 6, leaseMs: 60_000 });
    expect(first.map((run) => run.runId)).toEqual(["q1", "q2", "q3", "q4", "q5", "q6"]);
    const next = await fixture.store.claim({ owner: "w2", agents: ["approver"], limit: 2, leaseMs: 60_000 });
    expect(next.map((run) => run.runId)).toEqual(["q10", "q15"]);
    const rest = await fixture.store.claim({ owner: "w3", agents: ["basic"], limit: 3, leaseMs: 60_000 });
    expect(rest.map((run) => run.runId)).toEqual(["q7", "q8", "q9"]);
  });
});
