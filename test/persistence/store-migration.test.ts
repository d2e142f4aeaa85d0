import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { SqliteCheckpointStore } from "../../machines/persistence/checkpoints/sqlite-store.js";
import { SqliteRunStore } from "../../queue/sqlite/store.js";
import { checkMigratedCheckpoints, checkMigratedQueue, expected, FIXTURES } from "./store-migration-checks.js";

/** SQLite files written by release 52ccd4e (test/fixtures/stores/README.md), opened by this build. */
const dir = mkdtempSync(join(tmpdir(), "jianmu-migrate-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const copy = (name: string) => {
  const path = join(dir, `${Math.random().toString(36).slice(2)}-${name}`);
  copyFileSync(join(FIXTURES, name), path);
  return path;
};

describe("SQLite stores written by the release before one log per run", () => {
  it("a SqliteCheckpointStore file: every run reads back as before and continues; the file is at the latest layout, 3, and says so to older releases", async () => {
    const path = copy("checkpoints.db");
    const store = new SqliteCheckpointStore({ path });
    await checkMigratedCheckpoints(store);
    store.close();
    const raw = new Database(path, { readonly: true });
    expect(raw.pragma("user_version", { simple: true })).toBe(3);
    expect(raw.prepare("SELECT value FROM jianmu_queue_meta WHERE key = 'layout'").get()).toEqual({ value: "3" });
    expect(raw.prepare("SELECT name FROM sqlite_master WHERE name IN ('jianmu_tool_journal', 'jianmu_queue_runs', 'jianmu_v1_checkpoints')").all()).toEqual([]);
    raw.close();
    // Opened again (and by the queue's store, same layout): nothing left to migrate, the runs are there.
    const queue = new SqliteRunStore({ path });
    expect((await queue.list()).map((s) => s.runId).sort()).toEqual(["cp-finished", "cp-mid-tool", "cp-parked"]);
    await queue.close();
  });

  it("a SqliteRunStore file: statuses, checkpoints and outputs as before; a worker of this build approves, claims and finishes its runs", async () => {
    const store = new SqliteRunStore({ path: copy("queue.db"), pollMs: 50 });
    try {
      await checkMigratedQueue(store, expected.queue);
    } finally {
      await store.close();
    }
  });

  it("a file whose old checkpoint is damaged is refused by name, and left as it was", () => {
    const path = copy("checkpoints.db");
    const raw = new Database(path);
    raw.prepare("UPDATE jianmu_checkpoints SET body = '{\"format\"' WHERE run_id = 'cp-parked'").run();
    raw.close();
    expect(() => new SqliteCheckpointStore({ path })).toThrow(/the checkpoint of run cp-parked \(jianmu_checkpoints, written by an earlier jianmu\) cannot be read/);
    const after = new Database(path, { readonly: true });
    expect(after.pragma("user_version", { simple: true })).toBe(1);
    expect(after.prepare("SELECT count(*) AS n FROM jianmu_checkpoints").get()).toEqual({ n: 3 });
    after.close();
  });
});
