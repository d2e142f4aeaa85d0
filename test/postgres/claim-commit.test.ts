import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostgresRunStore } from "../../queue/postgres/store.js";
import { claimStatement } from "../../queue/postgres/statements.js";
import { freshDatabase } from "./database.js";

const input = { messages: [{ role: "user" as const, content: "hello" }] };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A claim commits without waiting for the disk (statements.ts). What that must not cost: a claim the
 * server loses in a crash leaves its holder fenced off, never sharing the run with the next claimer,
 * and the setting ends with the claim's own transaction.
 */
describe("PostgreSQL claim: committed without waiting for the flush", () => {
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
      const { rows } = await admin.query(claimStatement("claims"), [["basic"], 1, "probe", 1_000]);
      expect(rows).toHaveLength(1);
      expect((await admin.query<{ synchronous_commit: string }>("SHOW synchronous_commit")).rows[0]!.synchronous_commit).toBe("off");
    } finally {
      await admin.query("COMMIT");
    }
    expect((await admin.query<{ synchronous_commit: string }>("SHOW synchronous_commit")).rows[0]!.synchronous_commit).toBe("on");
    // Statements after it on the same connection, the saves and finishes of the run, wait for the disk again.
    await first.submit({ agent: "basic", input });
    expect(await admin.query(claimStatement("claims"), [["basic"], 1, "probe", 1_000])).toMatchObject({ rowCount: 1 });
    expect((await admin.query<{ synchronous_commit: string }>("SHOW synchronous_commit")).rows[0]!.synchronous_commit).toBe("on");
  });
});
