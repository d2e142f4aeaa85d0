import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostgresRunStore } from "../../queue/postgres/store.js";
import type { QueueSignal } from "../../queue/run-store.js";
import { endPool, freshDatabase } from "./database.js";

/**
 * A new LISTEN session tells every run a worker holds to look at its inbox (something may have come
 * while nobody listened). `untilListening` lets a worker start only once the session is up, so that
 * first signal finds no run held yet (a session that came up late made a held run read its inbox for
 * nothing, and the conformance test of selective inbox reads failed under load).
 */
describe("PostgreSQL run queue: untilListening", () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  beforeAll(async () => {
    db = await freshDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it("resolves with the LISTEN session up: a signal sent at once reaches the store", async () => {
    const store = await PostgresRunStore.connect({ connectionString: db.url, schema: "listening", pollMs: 60_000 });
    try {
      const signals: QueueSignal[] = [];
      const unsubscribe = store.subscribe((signal) => signals.push(signal));
      await store.untilListening();
      // The session's own "look at everything" came first, before it resolved.
      expect(signals).toEqual([{ kind: "runnable" }]);
      const runId = await store.submit({ agent: "basic", input: { messages: [{ role: "user", content: "hi" }] } });
      await expect.poll(() => signals, { timeout: 5_000 }).toContainEqual({ kind: "runnable", runId });
      unsubscribe();
      // Up once, it resolves at once from then on: before the event loop's next turn.
      const first = await Promise.race([store.untilListening().then(() => "listening"), new Promise((resolve) => setImmediate(() => resolve("waited")))]);
      expect(first).toBe("listening");
    } finally {
      await store.close();
    }
  });

  it("stops waiting after its bound when the LISTEN connection cannot be made, and queries go on", async () => {
    // Queries through a working pool; the LISTEN connection goes to a port nobody listens on.
    const pool = new pg.Pool({ connectionString: db.url, max: 2 });
    const store = await PostgresRunStore.connect({ connectionString: "postgres://nobody@127.0.0.1:9/none", pool, schema: "listening_down" });
    try {
      store.subscribe(() => undefined);
      const started = performance.now();
      await store.untilListening();
      const waited = performance.now() - started;
      expect(waited).toBeGreaterThanOrEqual(1_900);
      // It gave up instead of waiting for a connection that never comes.
      expect(waited).toBeLessThan(10_000);
      const runId = await store.submit({ agent: "basic", input: { messages: [{ role: "user", content: "still here" }] } });
      expect((await store.status(runId)).status).toBe("queued");
    } finally {
      await store.close();
      await endPool(pool);
    }
  });
});
