import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, inject } from "vitest";
import { PostgresRunStore } from "../../queue/postgres/store.js";
import type { PostgresRunStoreOptions } from "../../queue/postgres/options.js";

/** The server URL with another database name. */
export function withDatabase(serverUrl: string, database: string): string {
  const url = new URL(serverUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

/**
 * A fresh database for one test file on the run's PostgreSQL server (see global-setup.ts); `drop()` at the end.
 */
export async function freshDatabase(prefix = "jianmu_test"): Promise<{ url: string; name: string; drop(): Promise<void> }> {
  const server = inject("databaseUrl");
  if (!server) throw new Error(`no PostgreSQL server for the tests: ${inject("databaseError")}`);
  const name = `${prefix}_${randomBytes(5).toString("hex")}`;
  const admin = new pg.Client({ connectionString: server });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  return {
    url: withDatabase(server, name),
    name,
    async drop() {
      const client = new pg.Client({ connectionString: server });
      await client.connect();
      try {
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await client.end();
      }
    },
  };
}

/** What `storeWithAdmin` opens for a test file: its database, a client for the test's own SQL, the store. */
export interface StoreWithAdmin {
  db: Awaited<ReturnType<typeof freshDatabase>>;
  admin: pg.Client;
  store: PostgresRunStore;
}

/**
 * A fresh database, a client on it for the test's own SQL and a store in `schema`, opened before the
 * file's tests (hooks registered after this call run after it) and closed after them. Read the
 * fields inside hooks and tests: they are set once `beforeAll` has run.
 */
export function storeWithAdmin(schema: string, options: Omit<PostgresRunStoreOptions, "connectionString" | "schema"> = {}): StoreWithAdmin {
  const fixture = {} as StoreWithAdmin;
  beforeAll(async () => {
    fixture.db = await freshDatabase();
    fixture.admin = new pg.Client({ connectionString: fixture.db.url });
    await fixture.admin.connect();
    fixture.store = await PostgresRunStore.connect({ ...options, connectionString: fixture.db.url, schema });
  });
  afterAll(async () => {
    await fixture.store?.close();
    await fixture.admin?.end();
    await fixture.db?.drop();
  });
  return fixture;
}

/**
 * `pool.end()`, and then until every connection has closed. `end()` itself resolves as soon as the
 * pool has let go of its clients, while they are still closing; a `DROP DATABASE ... WITH (FORCE)`
 * right after terminates such a connection mid-close, and its FATAL then surfaces as an uncaught error.
 */
export async function endPool(pool: pg.Pool): Promise<void> {
  let open = pool.totalCount;
  const closed = new Promise<void>((resolve) => {
    if (open === 0) resolve();
    pool.on("remove", () => {
      if (--open === 0) resolve();
    });
  });
  await pool.end();
  await closed;
}

/** A fresh database holding what a pg_dump file (a store an earlier build wrote) holds, restored with psql. */
export async function databaseFromDump(dumpFile: string): Promise<Awaited<ReturnType<typeof freshDatabase>>> {
  const db = await freshDatabase();
  const restored = spawnSync("psql", [db.url, "-v", "ON_ERROR_STOP=1", "-q", "-f", dumpFile], { encoding: "utf8" });
  if (restored.status !== 0) {
    await db.drop();
    throw new Error(`psql could not restore the fixture dump ${dumpFile}: ${restored.stderr || restored.error?.message}`);
  }
  return db;
}
