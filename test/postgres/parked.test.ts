import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostgresRunStore } from "../../queue/postgres/store.js";
import { failedOutput } from "../../queue/run-store.js";
import { countingPool } from "./counting-pool.js";
import { claimScans } from "./plans.js";
import { endPool, freshDatabase } from "./database.js";

/**
 * Parked runs cost nothing per second: a claim (which is also every worker's poll) reads due runs
 * only, whether 0 or 100,000 runs wait for a person; and waiting for runs costs one LISTEN and no
 * per-waiter polling. Plans and statement counts are asserted, not timings.
 */
describe("PostgreSQL run queue: 100,000 parked runs", () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let admin: pg.Client;
  let counted: ReturnType<typeof countingPool>;
  let store: PostgresRunStore;

  beforeAll(async () => {
    db = await freshDatabase();
    admin = new pg.Client({ connectionString: db.url });
    await admin.connect();
    counted = countingPool(db.url);
    store = await PostgresRunStore.connect({ connectionString: db.url, schema: "parked", pool: counted.pool, pollMs: 50 });
  });
  afterAll(async () => {
    await store?.close();
    if (counted) await endPool(counted.pool);
    await admin?.end();
    await db?.drop();
  });

  const explainClaim = (agents: string[]) => claimScans(admin, "parked", agents);

  it("a claim looks at the due runs only: as few rows with 100,000 parked as with none, through the runs_due index", async () => {
    for (let i = 0; i < 3; i++) await store.submit({ agent: "basic", runId: `due-${i}` });
    const empty = await explainClaim(["basic", "approver"]);
    expect(empty.reduce((sum, scan) => sum + scan.examined, 0)).toBeLessThanOrEqual(20);

    // 100,000 runs waiting for a person (no deadline), 1,000 with a deadline tomorrow, 1,000 finished.
    // Rows as wide as a parked run's (its state and pending call; its checkpoints live in their own table).
    await admin.query(`INSERT INTO parked.runs (run_id, agent, input, status, wake_at, pending, state, created_at, updated_at)
      SELECT 'p' || g, 'approver', '{}', 'awaitingApproval', NULL, '[{"callId":"call_0","name":"pay","arguments":"{}"}]', repeat(md5(g::text), 10), g, g
      FROM generate_series(1, 100000) g`);
    await admin.query(`INSERT INTO parked.runs (run_id, agent, input, status, wake_at, created_at, updated_at)
      SELECT 'd' || g, 'approver', '{}', 'awaitingApproval', (extract(epoch from now()) * 1000)::bigint + 86400000, g, g FROM generate_series(1, 1000) g`);
    await admin.query(`INSERT INTO parked.runs (run_id, agent, input, status, output, created_at, updated_at)
      SELECT 'f' || g, 'basic', '{}', 'succeeded', '{}', g, g FROM generate_series(1, 1000) g`);
    await admin.query("ANALYZE parked.runs");

    const full = await explainClaim(["basic", "approver"]);
    expect(full.some((scan) => scan.type === "Seq Scan")).toBe(false);
    expect(full.find((scan) => scan.index === "runs_due")).toBeDefined();
    expect(full.reduce((sum, scan) => sum + scan.examined, 0)).toBeLessThanOrEqual(20);

    // An approval makes that one parked run due, and the claim finds it among the 100,000, the same way.
    await store.send("p50000", { type: "guard.approve", callId: "call_0" });
    const afterSend = await explainClaim(["approver"]);
    expect(afterSend.find((scan) => scan.index === "runs_due")).toBeDefined();
    expect(afterSend.reduce((sum, scan) => sum + scan.examined, 0)).toBeLessThanOrEqual(20);
    const claimed = await store.claim({ owner: "w", agents: ["approver"], limit: 10, leaseMs: 5_000 });
    expect(claimed.map((run) => run.runId)).toEqual(["p50000"]);
  }, 60_000);

  it("2,000 waits share one LISTEN: no statement per waiter while it works, one abort listener per signal", async () => {
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on("warning", onWarning);
    try {
      const ids = Array.from({ length: 2_000 }, (_, i) => `p${i + 1}`);
      const controller = new AbortController();
      const waits = ids.map((runId) => store.wait(runId, { signal: controller.signal }).catch((e: unknown) => e));
      // Each wait reads its run once when it starts; then the LISTEN connection says when one finishes.
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      const before = counted.statements();
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      // pollMs is 50: per-waiter polling would be 40,000 statements in this second.
      expect(counted.statements() - before).toBeLessThanOrEqual(2);
      const listening = await admin.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'jianmu:listen' AND datname = current_database()");
      expect(listening.rows[0].n).toBe(1);

      // One run finishes: its waiter hears of it through the notification.
      await store.send("p1", { type: "guard.approve", callId: "call_0" });
      const [run] = await store.claim({ owner: "w", agents: ["approver"], limit: 1, leaseMs: 5_000 });
      await store.finish(run!.runId, run!.token, failedOutput(run!.runId, "ended by the test"));
      const index = ids.indexOf(run!.runId);
      expect(await waits[index]).toMatchObject({ runId: run!.runId, status: "failed" });

      controller.abort(new Error("stopped waiting"));
      const rest = await Promise.all(waits.filter((_, i) => i !== index));
      expect(rest.every((e) => e instanceof Error && e.message === "stopped waiting")).toBe(true);
      expect(warnings.filter((w) => w.name === "MaxListenersExceededWarning")).toEqual([]);
    } finally {
      process.off("warning", onWarning);
    }
  }, 60_000);
});
