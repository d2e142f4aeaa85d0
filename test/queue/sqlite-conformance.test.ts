import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll } from "vitest";
import { SqliteRunStore } from "../../queue/sqlite/store.js";
import { describeRunStoreConformance } from "./conformance.js";

const dir = mkdtempSync(join(tmpdir(), "jianmu-sqlite-queue-"));
let files = 0;
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describeRunStoreConformance("SQLite", async (options = {}) => new SqliteRunStore({ path: join(dir, `runs-${++files}.db`), pollMs: 50, ...options }), { signals: false });
