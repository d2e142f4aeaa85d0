import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostgresRunStore } from "../../queue/postgres/store.js";
import { claimStatement } from "../../queue/postgres/statements.js";
import { freshDatabase } from "./database.js";

const input = { messages: [{ role: "user" as const, content: "hello" }] };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** The session's `synchronous_commit` as the connection sees it now. */
const synchronousCommit = async (client: pg.Client) => (await client.query<{ synchronous_commit: string }>("SHOW synchronous_commit")).rows[0]!.synchronous_commit;

/**
 * The claim statement (statements.ts). It commits without waiting for the disk; what that must not
 * cost: a claim the server loses in a crash leaves its holder fenced off, never sharing the run with
 * the next claimer, and the setting ends with the claim's own transaction. Its agents are in its
 * text: planned once per connection, not at every claim, and quoted so no name can break out.
 */
describe("PostgreSQL claim statement", () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let admin: pg.Client;
  let first: PostgresRunStore;
  let second: PostgresRunStore;

  beforeAll(async () => {
    db = await freshDatabase();
    admin = new pg.Client({ connectionString: db.url });
    await admin.connect();
    first = await PostgresRunStore.connect({ connectionString: db.url, schema: "claims" });
    second = await PostgresRunStore.connect({ connectionString: db.url, schema: "claims" });
    await first.registerAgents(["basic"]);
  });
  afterAll(async () => {
    await first?.close();
    await second?.close();
    await admin?.end();
    await db?.drop();
  });

  it("a claim lost in a crash is never claimed again under its token: its holder's writes are fenced off", async () => {
    const runId = await first.submit({ agent: "basic", input });
    const before = (await admin.query<{ token: string }>("SELECT token FROM claims.runs WHERE run_id = $1", [runId])).rows[0]!.token;
    const [lost] = await first.claim({ owner: "w1", agents: ["basic"], limit: 1, leaseMs: 60_000 });
    expect(lost?.runId).toBe(runId);
    // What recovery leaves when the claim's commit never reached the disk: the run as it was before.
    await admin.query("UPDATE claims.runs SET owner = NULL, lease_until = NULL, token = $2, status = 'queued' WHERE run_id = $1", [runId, before]);
    await sleep(2);
    const [next] = await second.claim({ owner: "w2", agents: ["basic"], limit: 1, leaseMs: 60_000 });
    expect(next?.runId).toBe(runId);
    expect(next!.token).not.toBe(lost!.token);
    expect(next!.token).toBeGreaterThan(lost!.token);
    expect(await first.renew(runId, lost!.token, 60_000)).toBe(false);
    expect(await first.finish(runId, lost!.token, { status: "succeeded", finalAnswer: "stale", messages: [], rounds: 0, usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 }, toolEffects: [], iterations: 0, runId, state: {} })).toBe(false);
    expect(await second.renew(runId, next!.token, 60_000)).toBe(true);
  });

  it("turns synchronous_commit off for its own transaction only", async () => {
    // The test clusters run with it off; this session has it on, as a deployment's would.
    await admin.query("SET synchronous_commit = on");
    await first.submit({ agent: "basic", input });
    await admin.query("BEGIN");
    try {
      const { rows } = await admin.query(claimStatement("claims", ["basic"]), [1, "probe", 1_000]);
      expect(rows).toHaveLength(1);
      expect(await synchronousCommit(admin)).toBe("off");
    } finally {
      await admin.query("COMMIT");
    }
    expect(await synchronousCommit(admin)).toBe("on");
    // Statements after it on the same connection, the saves and finishes of the run, wait for the disk again.
    await first.submit({ agent: "basic", input });
    expect(await admin.query(claimStatement("claims", ["basic"]), [1, "probe", 1_000])).toMatchObject({ rowCount: 1 });
    expect(await synchronousCommit(admin)).toBe("on");
  });

  it("is planned once per connection, not at every claim, beside many parked and finished runs", async () => {
    // As a worker leaves them: each run was due (in the claim's index) before it parked or finished.
    await admin.query(
      `INSERT INTO claims.runs (run_id, agent, status, input, created_at, updated_at, wake_at)
       SELECT 'parked-' || g, 'approver', 'queued', '{}', 0, 0, 0 FROM generate_series(1, 1000) g
       UNION ALL SELECT 'finished-' || g, 'basic', 'queued', '{}', 0, 0, 0 FROM generate_series(1, 10000) g`,
    );
    await admin.query("UPDATE claims.runs SET status = 'awaitingApproval', wake_at = NULL WHERE agent = 'approver'");
    await admin.query("UPDATE claims.runs SET status = 'succeeded', wake_at = NULL WHERE run_id LIKE 'finished-%'");
    await admin.query("VACUUM ANALYZE claims.runs");
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      for (let i = 0; i < 12; i++) {
        await first.submit({ agent: "basic", input });
        const { rowCount } = await client.query({ name: "claim", text: claimStatement("claims", ["basic", "other"]), values: [1, "probe", 1_000] });
        expect(rowCount).toBe(1);
      }
      // PostgreSQL plans the first five executions for their values, then keeps the generic plan when it costs no more.
      const { rows } = await client.query<{ generic_plans: string; custom_plans: string }>("SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name = 'claim'");
      expect(Number(rows[0]!.custom_plans)).toBeLessThanOrEqual(5);
      expect(Number(rows[0]!.generic_plans)).toBeGreaterThanOrEqual(7);
    } finally {
      await client.end();
    }
  });

  it("quotes agent names: a name holding quotes is an agent no run has, not SQL", async () => {
    const hostile = "x']::text[]) OR true; DROP TABLE claims.runs; --";
    await first.submit({ agent: "basic", input });
    expect(await first.claim({ owner: "w3", agents: [hostile], limit: 1, leaseMs: 1_000 })).toEqual([]);
    expect((await admin.query("SELECT count(*)::int AS n FROM claims.runs WHERE owner = 'w3'")).rows[0]).toEqual({ n: 0 });
    expect((await admin.query("SELECT count(*)::int AS n FROM claims.runs WHERE agent = 'basic' AND status = 'queued'")).rows[0]).toEqual({ n: 1 });
  });
});
