import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll } from "vitest";
import { SqliteCheckpointStore } from "../../machines/persistence/checkpoints/sqlite-store.js";
import { describeForkAfterKill } from "./fork-after-kill.js";

// The child runs the built package: `npm run build` first (the full suite's `npm test` does).
const dir = mkdtempSync(join(tmpdir(), "jianmu-fork-kill-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describeForkAfterKill(
  "SQLite",
  async (id) => ({ kind: "sqlite", path: join(dir, `${id}.db`) }),
  async (spec) => new SqliteCheckpointStore({ path: (spec as { path: string }).path }),
  () => dir,
);
