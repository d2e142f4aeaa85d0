import { resolve } from "node:path";
import type { RunStore } from "../queue/run-store.js";
import { UsageError } from "./args.js";

/**
 * `--store <file.db | postgres://...>`: a PostgreSQL URL opens the PostgreSQL run queue (pg loaded only
 * then), anything else is a SQLite file. Optional `--schema` for PostgreSQL.
 */
export async function openStore(spec: string | undefined, options: { cwd: string; schema?: string }): Promise<RunStore> {
  if (spec === undefined || spec.trim() === "") throw new UsageError("--store is required: a SQLite file (e.g. .jianmu/runs.db) or a PostgreSQL URL (postgres://user:password@host:5432/db)");
  if (/^postgres(ql)?:/.test(spec)) {
    const { PostgresRunStore } = await import("../queue/postgres/store.js");
    return PostgresRunStore.connect({ connectionString: spec, ...(options.schema !== undefined ? { schema: options.schema } : {}) });
  }
  if (options.schema !== undefined) throw new UsageError("--schema applies to a PostgreSQL --store only");
  const { SqliteRunStore } = await import("../queue/sqlite/store.js");
  return new SqliteRunStore({ path: resolve(options.cwd, spec) });
}
