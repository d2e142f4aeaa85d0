import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostgresRunStore } from "../../queue/postgres/store.js";
import { ErrorBodySchema } from "../../web/protocol.js";
import { startReplica, type Replica } from "../web/helpers.js";
import { paymentsAgent } from "../web/queue-helpers.js";
import { freshDatabase } from "./database.js";

/**
 * `agentHandler` over a PostgreSQL run store whose database fails under it (issue 34, H3): the client
 * gets a generic 500 with an error id and no database text; the server's log has the store's error
 * under that same id, so an operator finds the line the client's id names.
 */
describe("agentHandler on PostgreSQL: a store failure is answered with an id the log carries", () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let store: PostgresRunStore;
  let replica: Replica;
  let close: () => Promise<void>;
  const logged: Error[] = [];

  beforeAll(async () => {
    db = await freshDatabase();
    // pg takes the password from the query string too: it must reach neither a client nor the store's errors.
    const url = new URL(db.url);
    url.searchParams.set("password", "S3CRET-PW");
    store = await PostgresRunStore.connect({ connectionString: url.toString(), schema: "webfail", listen: false });
    const agent = await paymentsAgent(store);
    close = () => agent.model.close();
    replica = await startReplica({ agents: agent.agents, store, worker: false, onError: (error) => logged.push(error) });
  });
  afterAll(async () => {
    await replica?.stop();
    await close?.();
    await db?.drop();
  });

  it("answers 500 with a generic body and an errorId; the logged error carries the id and the database's reason", async () => {
    const admin = new pg.Client({ connectionString: db.url });
    await admin.connect();
    // The runs table goes away under the running handler: every read of a run fails in the database.
    await admin.query("DROP TABLE webfail.runs CASCADE");
    await admin.end();

    const ids = new Set<string>();
    for (const path of ["runs/some-run", "runs/some-run/stream"]) {
      const answer = await fetch(`${replica.base}/${path}`);
      expect(answer.status).toBe(500);
      const text = await answer.text();
      expect(text).not.toMatch(/S3CRET|127\.0\.0\.1|postgres:|webfail|relation/);
      const { error } = ErrorBodySchema.parse(JSON.parse(text));
      expect(error.errorId).toMatch(/^[0-9a-f-]{8,}$/);
      expect(error.message).toContain(error.errorId);
      ids.add(error.errorId!);
    }
    expect(ids.size).toBe(2);
    for (const id of ids) {
      const line = logged.find((e) => e.message.includes(id));
      expect(line?.message).toMatch(/relation .*runs.* does not exist/);
    }
    expect(logged.map((e) => `${e.message} ${String(e.stack)}`).join("\n")).not.toContain("S3CRET");
  });
});
