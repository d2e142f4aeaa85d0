import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshDatabase } from "./database.js";

describe("the test PostgreSQL server", () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  beforeAll(async () => {
    db = await freshDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it("gives each test file a database of its own on a PostgreSQL 15+ server", async () => {
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      const { rows } = await client.query<{ db: string; version: number }>("SELECT current_database() AS db, current_setting('server_version_num')::int AS version");
      expect(rows[0]!.db).toBe(db.name);
      expect(rows[0]!.version).toBeGreaterThanOrEqual(150000);
    } finally {
      await client.end();
    }
  });
});
