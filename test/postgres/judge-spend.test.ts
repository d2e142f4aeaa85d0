import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostgresRunStore } from "../../queue/postgres/store.js";
import type { OpenAIServer } from "../../testing/openai-server.js";
import { resumed, stoppedWhileJudging } from "../persistence/restored-judge.js";
import { pricedServer } from "../persistence/restored-spend.js";
import { freshDatabase } from "./database.js";

/**
 * A judge call a stopped process's guardrail had made is counted by the next process that resumes
 * the run, with the run's log and journal in PostgreSQL (test/persistence/restored-judge-spend.test.ts
 * shows the rest on the in-memory and SQLite stores).
 */
describe("PostgreSQL: a judge call a stopped process had made", () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let server: OpenAIServer;
  beforeAll(async () => {
    db = await freshDatabase();
    server = await pricedServer();
  });
  afterAll(async () => {
    await server?.close();
    await db?.drop();
  });

  it("is recorded in the tool journal before it is made, and counted by the process that resumes the run", async () => {
    const options = { config: { maxBudgetTokens: 100_000, maxTokens: 500 } };
    const first = await PostgresRunStore.connect({ connectionString: db.url, schema: "judges" });
    let lost: Awaited<ReturnType<typeof stoppedWhileJudging>>;
    try {
      lost = await stoppedWhileJudging(options, first);
    } finally {
      await first.close();
    }
    const next = await PostgresRunStore.connect({ connectionString: db.url, schema: "judges" });
    try {
      const { output, terminated, sent } = await resumed(server, options, await next.load("run-1"), next);
      expect(output.status).toBe("succeeded");
      expect(sent).toBe(2);
      expect(terminated?.unreported?.tokens).toBe(lost.lostReply.tokens + lost.lostJudge.tokens);
    } finally {
      await next.close();
    }
  }, 30_000);
});
