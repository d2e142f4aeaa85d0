import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runAgent } from "../../machines/runner.js";
import type { CheckpointStore } from "../../machines/persistence/checkpoints/store.js";
import { MemoryToolJournal, type ToolJournal } from "../../actors/tool-journal.js";
import { MemoryCheckpointStore } from "../../machines/persistence/checkpoints/memory-store.js";
import { SqliteCheckpointStore } from "../../sqlite.js";
import { PostgresRunStore } from "../../queue/postgres/store.js";
import { makeAgents } from "../queue/fixture-agents.mjs";
import { scriptMessage, startScriptServer } from "../queue/script-model.js";
import { freshDatabase } from "./database.js";
import { jianmu } from "../queue/fixture-jianmu.js";


/**
 * Issue 34 item 1 for the checkpoint stores (the run stores' case is in test/queue/conformance.ts):
 * a NUL, a lone low surrogate and a high one cut from its pair, in the input, a tool result, a tool's
 * error and the model's answer, are saved and read back exactly by the memory, SQLite and PostgreSQL
 * stores under `runAgent`, never refused and never replaced.
 */
describe("checkpoint stores keep NUL and unpaired surrogates exactly", () => {
  const odd = "nul\u0000 low\udc00 high\ud83d end";
  const dir = mkdtempSync(join(tmpdir(), "jianmu-odd-"));
  const closers: (() => Promise<void> | void)[] = [];
  afterAll(async () => {
    for (const close of closers.reverse()) await close();
    rmSync(dir, { recursive: true, force: true });
  });

  const stores: [string, () => Promise<CheckpointStore & Partial<ToolJournal>>][] = [
    ["MemoryCheckpointStore", async () => new MemoryCheckpointStore()],
    ["SqliteCheckpointStore", async () => new SqliteCheckpointStore({ path: join(dir, "odd.db") })],
    [
      "PostgresRunStore",
      async () => {
        const db = await freshDatabase();
        const store = await PostgresRunStore.connect({ connectionString: db.url, listen: false });
        closers.push(() => db.drop(), () => store.close());
        return store;
      },
    ],
  ];

  it.each(stores)("%s", async (_, make) => {
    const server = await startScriptServer();
    closers.push(() => server.close());
    const store = await make();
    const agents = makeAgents(jianmu, {
      baseURL: server.baseURL,
      journal: "lookup" in store ? (store as ToolJournal) : new MemoryToolJournal(),
      effect: (note: string) => {
        if (note.startsWith("THROW")) throw new Error(`boom ${odd}`);
      },
    });
    const script = scriptMessage({ calls: [{ name: "record", note: `ok ${odd}` }, { name: "record", note: `THROW ${odd}` }], answer: `answer ${odd}` });
    const output = await runAgent(agents.basic, { runId: "odd-run", messages: [script, { role: "user", content: `input ${odd}` }] }, { checkpoints: store });
    expect(output).toMatchObject({ status: "succeeded", finalAnswer: `answer ${odd}` });
    const tools = output.messages.filter((m) => m.role === "tool").map((m) => m.content);
    expect(tools).toEqual([`recorded ok ${odd}`, expect.stringContaining(`boom ${odd}`)]);

    // What the store gives back holds every one of them as it was (JSON escapes compared, so a U+FFFD or a dropped NUL shows).
    const saved = JSON.stringify(await store.load("odd-run"));
    for (const text of [`input ${odd}`, `recorded ok ${odd}`, `boom ${odd}`, `answer ${odd}`]) expect(saved).toContain(JSON.stringify(text).slice(1, -1));
    expect(saved).not.toContain("\\ufffd");
  });
});
