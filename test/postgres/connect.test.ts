import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { human } from "../../actors/messages.js";
import { MIGRATIONS } from "../../queue/postgres/migrations.js";
import { PostgresRunStore } from "../../queue/postgres/store.js";
import { failedOutput } from "../../queue/run-store.js";
import { freePort } from "./cluster.js";
import { endPool, freshDatabase, withDatabase } from "./database.js";

/** Connecting and migrating: bad options, unreachable servers, missing rights, many processes at once. */
describe("PostgresRunStore.connect", () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let admin: pg.Client;
  beforeAll(async () => {
    db = await freshDatabase();
    admin = new pg.Client({ connectionString: db.url });
    await admin.connect();
  });
  afterAll(async () => {
    await admin?.end();
    await db?.drop();
  });
  const schemaExists = async (schema: string) => (await admin.query("SELECT 1 FROM pg_namespace WHERE nspname = $1", [schema])).rowCount === 1;

  it("refuses a malformed connection string, naming the option and the expected form", async () => {
    for (const connectionString of ["not a url", "mysql://root@localhost/app", "postgres://", ""]) {
      await expect(PostgresRunStore.connect({ connectionString })).rejects.toMatchObject({
        problem: "invalid_input",
        message: expect.stringMatching(/options\.connectionString .*postgres:\/\/user:password@localhost:5432\/app/),
      });
    }
    await expect(PostgresRunStore.connect({} as never)).rejects.toMatchObject({ problem: "invalid_input", message: expect.stringContaining("connectionString") });
  });

  it("refuses a schema name that is not a plain identifier, before touching the database", async () => {
    for (const schema of ["Robert'); DROP TABLE runs;--", "has space", "1abc", "UPPER"]) {
      await expect(PostgresRunStore.connect({ connectionString: db.url, schema })).rejects.toMatchObject({
        problem: "invalid_input",
        message: expect.stringContaining("options.schema must be a plain lower-case identifier"),
      });
    }
  });

  it("says the server cannot be reached, without the URL or its password (in the userinfo or the query), naming the server only when asked", async () => {
    const port = await freePort();
    for (const connectionString of [`postgres://someone:hunter2@127.0.0.1:${port}/app`, `postgres://someone@127.0.0.1:${port}/app?password=hunter2`]) {
      const error = await PostgresRunStore.connect({ connectionString, connectTimeoutMs: 2_000 }).catch((e: unknown) => e);
      expect(error).toMatchObject({ problem: "connection", message: expect.stringContaining("is it running") });
      for (const secret of ["hunter2", "someone", String(port), "postgres://"]) expect((error as Error).message).not.toContain(secret);
      const named = await PostgresRunStore.connect({ connectionString, connectTimeoutMs: 2_000, nameServerInErrors: true }).catch((e: unknown) => e);
      expect((named as Error).message).toContain(`at 127.0.0.1:${port}/app`);
      expect((named as Error).message).not.toContain("hunter2");
    }
  });

  it("names a missing database and how to create it, the name only when asked", async () => {
    await expect(PostgresRunStore.connect({ connectionString: withDatabase(db.url, "no_such_db") })).rejects.toMatchObject({
      problem: "connection",
      message: expect.stringMatching(/^the database does not exist: create it \(createdb <name>\)/),
    });
    await expect(PostgresRunStore.connect({ connectionString: withDatabase(db.url, "no_such_db"), nameServerInErrors: true })).rejects.toMatchObject({
      problem: "connection",
      message: expect.stringContaining("createdb no_such_db"),
    });
  });

  it("explains missing rights and writes nothing", async () => {
    await admin.query("DROP ROLE IF EXISTS jianmu_nobody");
    await admin.query("CREATE ROLE jianmu_nobody LOGIN");
    const url = new URL(db.url);
    url.username = "jianmu_nobody";
    await expect(PostgresRunStore.connect({ connectionString: url.toString(), schema: "forbidden" })).rejects.toMatchObject({
      problem: "permission",
      message: expect.stringContaining("GRANT CREATE ON DATABASE <database> TO <role>"),
    });
    await expect(PostgresRunStore.connect({ connectionString: url.toString(), schema: "forbidden", nameServerInErrors: true })).rejects.toMatchObject({
      problem: "permission",
      message: expect.stringMatching(new RegExp(`GRANT CREATE ON DATABASE ${db.name} TO jianmu_nobody`)),
    });
    expect(await schemaExists("forbidden")).toBe(false);
    // Once an owner has created the tables and granted use of them, the same role connects.
    const owner = await PostgresRunStore.connect({ connectionString: db.url, schema: "granted" });
    await owner.close();
    await admin.query("GRANT USAGE ON SCHEMA granted TO jianmu_nobody; GRANT ALL ON ALL TABLES IN SCHEMA granted TO jianmu_nobody; GRANT ALL ON ALL SEQUENCES IN SCHEMA granted TO jianmu_nobody");
    const user = await PostgresRunStore.connect({ connectionString: url.toString(), schema: "granted" });
    await user.registerAgents(["basic"]);
    expect(await user.submit({ agent: "basic", runId: "as-nobody" })).toBe("as-nobody");
    await user.close();
  });

  it("migrates once when many processes connect at the same time, and again is a no-op", async () => {
    const stores = await Promise.all(Array.from({ length: 6 }, () => PostgresRunStore.connect({ connectionString: db.url, schema: "together" })));
    await Promise.all(stores.map((s) => s.close()));
    const again = await PostgresRunStore.connect({ connectionString: db.url, schema: "together" });
    await again.close();
    const { rows } = await admin.query("SELECT version FROM together.schema_migrations ORDER BY version");
    expect(rows).toEqual(MIGRATIONS.map(({ version }) => ({ version })));
    expect(rows.map((r) => r.version)).toEqual([1, 2, 3, 4, 5, 6, 7]);
  });

  it("migrates a version 1 schema with runs in it: JSON moves to text columns unchanged, a parked run with an event becomes due", async () => {
    await admin.query("CREATE SCHEMA old_layout");
    await admin.query("CREATE TABLE old_layout.schema_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())");
    await admin.query(MIGRATIONS[0]!.sql("old_layout"));
    await admin.query("INSERT INTO old_layout.schema_migrations (version) VALUES (1)");
    const pending = [{ callId: "call_0", name: "pay", arguments: "{}" }];
    const output = failedOutput("done", "over", { messages: [human("hi")] });
    await admin.query(
      `INSERT INTO old_layout.runs (run_id, agent, input, status, pending, output, created_at, updated_at) VALUES
         ('parked', 'approver', '{"messages":[]}', 'awaitingApproval', $1, NULL, 1, 1), ('done', 'basic', '{}', 'failed', '[]', $2, 1, 1)`,
      [JSON.stringify(pending), JSON.stringify(output)],
    );
    await admin.query(`INSERT INTO old_layout.inbox (run_id, dedupe_key, command, created_at) VALUES ('parked', 'call:call_0', '{"type":"guard.approve","callId":"call_0"}', 1)`);
    const store = await PostgresRunStore.connect({ connectionString: db.url, schema: "old_layout" });
    try {
      expect((await store.status("parked")).pendingApprovals).toEqual(pending);
      expect(await store.wait("done")).toEqual(output);
      expect(await store.inbox("parked", 0)).toEqual([{ id: expect.any(Number), command: { type: "guard.approve", callId: "call_0" } }]);
      // The approval sent under version 1 made no wake_at; the migration did, so the claim finds it.
      expect((await store.claim({ owner: "w", agents: ["approver"], limit: 5, leaseMs: 1_000 })).map((r) => r.runId)).toEqual(["parked"]);
    } finally {
      await store.close();
    }
  });

  it("labels data PostgreSQL refuses as the caller's (invalid_input naming the call), never as a connection problem", async () => {
    const store = await PostgresRunStore.connect({ connectionString: db.url, schema: "refusing" });
    try {
      await store.registerAgents(["basic"]);
      // As jsonb once did: a value the column refuses (here a trigger with SQLSTATE 22P05, "untranslatable character").
      await admin.query(`CREATE FUNCTION refusing.refuse() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN IF NEW.input LIKE '%REFUSE%' THEN RAISE EXCEPTION 'unsupported Unicode escape sequence' USING ERRCODE = '22P05'; END IF; RETURN NEW; END $$`);
      await admin.query("CREATE TRIGGER refuse BEFORE INSERT ON refusing.runs FOR EACH ROW EXECUTE FUNCTION refusing.refuse()");
      const error = await store.submit({ agent: "basic", input: { messages: [human("REFUSE this")] } }).catch((e: unknown) => e);
      expect(error).toMatchObject({ problem: "invalid_input", message: expect.stringMatching(/^submit: input: PostgreSQL cannot store this value \(unsupported Unicode escape sequence, SQLSTATE 22P05\).*retrying will not help/) });
      // A run id with a NUL (GET /runs/%00 through an HTTP handler) is no run at all, not a failure.
      expect(await store.load("a\u0000b")).toBeUndefined();
    } finally {
      await store.close();
    }
  });

  it("refuses a schema written by a newer jianmu, changing nothing", async () => {
    const store = await PostgresRunStore.connect({ connectionString: db.url, schema: "future" });
    await store.close();
    await admin.query("INSERT INTO future.schema_migrations (version) VALUES (99)");
    await expect(PostgresRunStore.connect({ connectionString: db.url, schema: "future" })).rejects.toMatchObject({
      problem: "schema",
      message: expect.stringContaining("newer jianmu"),
    });
  });

  it("prepares its statements once per connection (option prepare), survives a migration adding a column, and sends them unnamed with prepare: false", async () => {
    const prepared = async (prepare: boolean) => {
      // One connection, so the statements the store prepared are the ones this session can list.
      const pool = new pg.Pool({ connectionString: db.url, max: 1 });
      const store = await PostgresRunStore.connect({ connectionString: db.url, schema: `prep_${prepare}`, pool, prepare });
      try {
        await store.registerAgents(["basic"]);
        for (const runId of ["p1", "p2"]) await store.submit({ agent: "basic", runId });
        expect(await store.status("p1")).toMatchObject({ status: "queued" });
        // A later release adds a column while this process runs: its prepared statements are planned again, not broken.
        await admin.query(`ALTER TABLE prep_${prepare}.runs ADD COLUMN later text`);
        expect(await store.claim({ owner: "w", agents: ["basic"], limit: 2, leaseMs: 5_000 })).toHaveLength(2);
        expect(await store.status("p1")).toMatchObject({ status: "running", owner: "w" });
        return (await pool.query<{ name: string }>("SELECT name FROM pg_prepared_statements")).rows.map((r) => r.name);
      } finally {
        await store.close();
        await endPool(pool);
      }
    };
    expect((await prepared(true)).filter((name) => name.startsWith("jianmu_")).length).toBeGreaterThanOrEqual(2);
    expect(await prepared(false)).toEqual([]);
  });

  it("refuses calls after close with a clear error", async () => {
    const store = await PostgresRunStore.connect({ connectionString: db.url, schema: "closing" });
    await store.close();
    await expect(store.status("x")).rejects.toMatchObject({ problem: "closed" });
  });
});
