import { readFileSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { human } from "../../actors/messages.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { forkRun } from "../../machines/persistence/log/fork.js";
import { loadThread } from "../../machines/persistence/log/threads.js";
import { restoreAgent } from "../../machines/persistence/persistence.js";
import { runAgent } from "../../machines/runner.js";
import { PostgresRunStore } from "../../queue/postgres/store.js";
import { scriptedModel } from "../../testing/scripted-model.js";
import { defineTool } from "../../tools/tool.js";
import { checkpointAgents } from "../fixtures/stores/scenarios.mjs";
import { FINISHED, FORK, PARKED, THREAD, executingAt } from "../fixtures/stores/v5/scenarios.mjs";
import { databaseFromDump } from "./database.js";

/**
 * A PostgreSQL run log at schema version 5 (test/fixtures/stores/v5/store-v5.sql, written by build 51f7c5d,
 * each tool outcome journaled whole), restored with psql into a fresh database and opened by this build:
 * migration 6 (a tool result stored once) applies, the runs read back as that build read them, and they
 * continue, fork and keep their thread, the old journal rows answering beside the new ones.
 */
const V5 = join(import.meta.dirname, "../fixtures/stores/v5");
const expected = JSON.parse(readFileSync(join(V5, "expected.json"), "utf8")) as {
  runs: Record<string, { checkpoint: string; history: unknown[] }>;
  journal: Record<string, unknown>;
  thread: unknown;
};

let db: Awaited<ReturnType<typeof databaseFromDump>>;
beforeAll(async () => {
  db = await databaseFromDump(join(V5, "store-v5.sql"));
});
afterAll(async () => {
  await db?.drop();
});

describe("a PostgreSQL run log at schema version 5", () => {
  it("migrates to the latest, 7, on connect; runs, histories, journal and thread read as before; the runs continue, fork without running a journaled call again, and new tool results are stored once", async () => {
    const admin = new pg.Client({ connectionString: db.url });
    await admin.connect();
    const version = async () => (await admin.query("SELECT max(version) AS v FROM jianmu.schema_migrations")).rows[0].v;
    try {
      expect(await version()).toBe(5);
      const store = await PostgresRunStore.connect({ connectionString: db.url, schema: "jianmu", listen: false });
      try {
        expect(await version()).toBe(7);
        for (const [runId, old] of Object.entries(expected.runs)) {
          expect(JSON.stringify(await store.load(runId))).toBe(old.checkpoint);
          expect(await store.history(runId)).toEqual(old.history);
        }
        for (const [callId, entry] of Object.entries(expected.journal)) {
          const iteration = FINISHED.script.findIndex((s) => s.toolCalls?.[0]?.id === callId);
          expect(await store.lookup({ runId: FINISHED.runId, iteration, callId })).toEqual(entry);
        }
        expect(await loadThread(store, THREAD.threadId)).toEqual(expected.thread);

        const effects: string[] = [];
        const agents = checkpointAgents({ createReactMachine, defineTool, scriptedModel }, { journal: store, effects, script: {} });
        const resume = async (kind: "Parked" | "Finished", runId: string, script: object[]) => {
          const machine = agents[kind](script);
          return runAgent(machine, undefined, { snapshot: restoreAgent(machine, await store.load(runId)), checkpoints: store, onApproval: () => ({ approve: true }) });
        };
        // The fork made by the old build, at call_a's batch: call_a's outcome comes from the original's old journal row.
        expect(await resume("Finished", FORK.runId, [{ content: "Fork done." }])).toMatchObject({ status: "succeeded", finalAnswer: "Fork done." });
        // A fork made now, at call_b's batch, inherits the old rows the same way.
        const newFork = await forkRun(store, FINISHED.runId, { from: executingAt(await store.history(FINISHED.runId), 1).checkpointId, runId: "v6-fork" });
        const forked = await resume("Finished", newFork, [{ content: "New fork done." }]);
        expect(forked).toMatchObject({ status: "succeeded", finalAnswer: "New fork done." });
        expect(forked.messages.filter((m) => m.role === "tool").map((m) => m.content)).toEqual(["recorded v5-finished:a", "recorded v5-finished:b"]);
        // The parked run is approved and runs its call: a new journal row, whose text the next save replaced by the tool message's place.
        expect(await resume("Parked", PARKED.runId, [{ content: "Recorded." }])).toMatchObject({ status: "succeeded", finalAnswer: "Recorded." });
        expect(effects).toEqual(["v5-parked"]);
        const { rows } = await admin.query("SELECT content, item_stream IS NOT NULL AS placed FROM jianmu.tool_journal WHERE run_id = $1", [PARKED.runId]);
        expect(rows).toEqual([{ content: null, placed: true }]);
        expect(await store.lookup({ runId: PARKED.runId, iteration: 0, callId: "call_p" })).toMatchObject({ state: "completed", outcome: { callId: "call_p", status: "ok", content: "recorded v5-parked" } });
        // The thread's next run continues its conversation.
        const third = await runAgent(agents.Finished([{ content: "Third answered." }]), { threadId: THREAD.threadId, runId: "v6-thread-3", messages: [human("and a third")] }, { checkpoints: store });
        expect(third.status).toBe("succeeded");
        const thread = await loadThread(store, THREAD.threadId);
        expect(thread.runs).toEqual([...THREAD.runs.map((r) => r.runId), "v6-thread-3"]);
        expect(thread.messages.slice(0, (expected.thread as { messages: unknown[] }).messages.length)).toEqual((expected.thread as { messages: unknown[] }).messages);
      } finally {
        await store.close();
      }
    } finally {
      await admin.end();
    }
  });
});
