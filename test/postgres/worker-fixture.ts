import pg from "pg";
import { afterAll, afterEach, beforeAll } from "vitest";
import { PostgresRunStore } from "../../queue/postgres/store.js";
import type { OpenAIServer } from "../../testing/openai-server.js";
import { scriptMessage, startScriptServer, type RunScript } from "../queue/script-model.js";
import { endPool, freshDatabase } from "./database.js";
import { checkBuilt, WorkerProcess, type WorkerProcessOptions } from "./worker-processes.js";

/**
 * What the worker-process test files share, registered as hooks of the calling `describe`: a fresh
 * database with an `effects` table the tools count their side effects in, the scripted model server,
 * a schema per test, and worker processes and stores cleaned up after each test.
 */
export function workerProcessFixture() {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let pool: pg.Pool;
  let server: OpenAIServer;
  let schemas = 0;
  const workers: WorkerProcess[] = [];
  const stores: PostgresRunStore[] = [];

  beforeAll(async () => {
    checkBuilt();
    db = await freshDatabase();
    pool = new pg.Pool({ connectionString: db.url, max: 4 });
    await pool.query("CREATE TABLE effects (note text PRIMARY KEY, count integer NOT NULL)");
    server = await startScriptServer();
  });
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.kill()));
    await Promise.all(stores.splice(0).map((s) => s.close()));
  });
  afterAll(async () => {
    await server?.close();
    if (pool) await endPool(pool);
    await db?.drop();
  });

  return {
    /** Plain SQL on the test database (the effects table, the store's own tables). */
    sql: (text: string, values?: unknown[]) => pool.query(text, values),
    newSchema: async () => {
      const schema = `w${++schemas}`;
      const store = await PostgresRunStore.connect({ connectionString: db.url, schema, pollMs: 100 });
      stores.push(store);
      // Submitting needs a worker to have announced the agents; the processes do it, this saves a wait.
      await store.registerAgents(["basic", "approver", "deadline"]);
      return { schema, store };
    },
    spawnWorker: (schema: string, id: string, options: Partial<WorkerProcessOptions> = {}) => {
      const worker = new WorkerProcess({ url: db.url, schema, baseURL: server.baseURL, id, ...options });
      workers.push(worker);
      return worker;
    },
    /** Every worker process this test spawned, killed ones included (their events stay readable). */
    spawned: (): readonly WorkerProcess[] => workers,
    input: (script: RunScript) => ({ messages: [scriptMessage(script)] }),
    effectsOf: async (prefix: string) => {
      const { rows } = await pool.query<{ note: string; count: number }>("SELECT note, count FROM effects WHERE note LIKE $1 ORDER BY note", [`${prefix}%`]);
      return Object.fromEntries(rows.map((r) => [r.note, r.count]));
    },
  };
}
