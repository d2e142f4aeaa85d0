import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll } from "vitest";
import { PostgresRunStore } from "../../queue/postgres/store.js";
import { describeForkAfterKill } from "../persistence/fork-after-kill.js";
import { freshDatabase } from "./database.js";

// The child runs the built package: `npm run build` first (the full suite's `npm test` does).
const dir = mkdtempSync(join(tmpdir(), "jianmu-fork-kill-pg-"));
let db: Awaited<ReturnType<typeof freshDatabase>>;
beforeAll(async () => {
  db = await freshDatabase();
});
afterAll(async () => {
  await db?.drop();
  rmSync(dir, { recursive: true, force: true });
});

describeForkAfterKill(
  "PostgreSQL",
  async (id) => ({ kind: "postgres", url: db.url, schema: `k_${id.replace(/-/g, "_")}` }),
  (spec) => PostgresRunStore.connect({ connectionString: (spec as { url: string }).url, schema: (spec as { schema: string }).schema }),
  () => dir,
);
