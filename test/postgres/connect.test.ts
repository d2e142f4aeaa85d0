import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostgresRunStore } from "../../queue/postgres/store.js";
import { freePort } from "./cluster.js";
import { freshDatabase, withDatabase } from "./database.js";

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

  it("says the server cannot be reached, without the password", async () => {
    const port = await freePort();
    const error = await PostgresRunStore.connect({ connectionString: `postgres://someone:hunter2@127.0.0.1:${port}/app`, connectTimeoutMs: 2_000 }).catch((e: unknown) => e);
    expect(error).toMatchObject({ problem: "connection", message: expect.stringContaining("is the server running") });
    expect((error as Error).message).not.toContain("hunter2");
  });

  it("names a missing database and how to create it", async () => {
    await expect(PostgresRunStore.connect({ connectionString: withDatabase(db.url, "no_such_db") })).rejects.toMatchObject({
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
      message: expect.stringMatching(/jianmu_nobody.*GRANT CREATE ON DATABASE/s),
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
    expect(rows).toEqual([{ version: 1 }, { version: 2 }, { version: 3 }]);
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

  it("refuses calls after close with a clear error", async () => {
    const store = await PostgresRunStore.connect({ connectionString: db.url, schema: "closing" });
    await store.close();
    await expect(store.status("x")).rejects.toMatchObject({ problem: "closed" });
  });
});
