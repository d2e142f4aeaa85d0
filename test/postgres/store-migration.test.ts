import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostgresRunStore } from "../../queue/postgres/store.js";
import { checkMigratedQueue, expected, FIXTURES } from "../persistence/store-migration-checks.js";
import { databaseFromDump } from "./database.js";

/**
 * A PostgreSQL schema written by release 52ccd4e (test/fixtures/stores/queue-pg.sql, a pg_dump), restored
 * with psql into a fresh database and opened by this build: migration 4 moves every run's checkpoint
 * into its log, and the queue goes on as before.
 */
let db: Awaited<ReturnType<typeof databaseFromDump>>;
beforeAll(async () => {
  db = await databaseFromDump(join(FIXTURES, "queue-pg.sql"));
});
afterAll(async () => {
  await db?.drop();
});

describe("a PostgreSQL schema written by the release before one log per run", () => {
  it("migrates through version 4 (the run log) to the latest, 7 (a claim reads due runs in the order it takes them), on connect; statuses, checkpoints and outputs read as before; a worker of this build finishes its runs", async () => {
    const admin = new pg.Client({ connectionString: db.url });
    await admin.connect();
    try {
      expect((await admin.query("SELECT max(version) AS v FROM jianmu.schema_migrations")).rows).toEqual([{ v: 1 }]);
      const store = await PostgresRunStore.connect({ connectionString: db.url, schema: "jianmu", pollMs: 50 });
      try {
        expect((await admin.query("SELECT max(version) AS v FROM jianmu.schema_migrations")).rows).toEqual([{ v: 7 }]);
        expect((await admin.query("SELECT to_regclass('jianmu.run_events')::text AS t")).rows).toEqual([{ t: "jianmu.run_events" }]);
        expect((await admin.query("SELECT column_name FROM information_schema.columns WHERE table_schema = 'jianmu' AND table_name = 'runs' AND column_name = 'checkpoint'")).rows).toEqual([]);
        await checkMigratedQueue(store, expected.postgres);
      } finally {
        await store.close();
      }
    } finally {
      await admin.end();
    }
  });
});
