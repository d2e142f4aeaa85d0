import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll } from "vitest";
import { MemoryCheckpointStore } from "../../machines/persistence/checkpoints/memory-store.js";
import { SqliteCheckpointStore } from "../../machines/persistence/checkpoints/sqlite-store.js";
import { MemoryRunStore } from "../../queue/memory-store.js";
import { SqliteRunStore } from "../../queue/sqlite/store.js";
import { describeRunLogConformance } from "./log-conformance.js";

const dir = mkdtempSync(join(tmpdir(), "jianmu-log-"));
let files = 0;
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describeRunLogConformance("MemoryCheckpointStore", async (options) => new MemoryCheckpointStore(options));
describeRunLogConformance("SqliteCheckpointStore", async (options) => new SqliteCheckpointStore({ path: join(dir, `log-${++files}.db`), ...options }));
describeRunLogConformance("MemoryRunStore", async (options) => new MemoryRunStore(options));
describeRunLogConformance("SqliteRunStore", async (options) => new SqliteRunStore({ path: join(dir, `queue-${++files}.db`), ...options }));
