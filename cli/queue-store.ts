import { existsSync } from "node:fs";
import { resolve } from "node:path";
import type { RunStore } from "../queue/run-store.js";
import { loadOptionalPeer } from "../tools/optional-peer.js";
import { UsageError } from "./args.js";

export interface StoreOptions {
  cwd: string;
  schema?: string;
  /**
   * A reading command (runs, view, approve, ...) opens a queue that exists: a missing SQLite file or
   * PostgreSQL schema is an error, never created. Only worker and run --store create one.
   */
  existing: boolean;
}

/**
 * `--store <file.db | postgres://...>`: a PostgreSQL URL opens the PostgreSQL run queue (pg loaded only
 * then), a path is a SQLite file. Any other URL scheme is a mistake (a typo of postgres://, or a
 * database jianmu does not speak), never a file name. Optional `--schema` for PostgreSQL.
 */
export async function openStore(spec: string | undefined, options: StoreOptions): Promise<RunStore> {
  if (spec === undefined || spec.trim() === "") throw new UsageError("--store is required: a SQLite file (e.g. .jianmu/runs.db) or a PostgreSQL URL (postgres://user:password@host:5432/db)");
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(spec)?.[1];
  if (scheme !== undefined && !/^postgres(ql)?$/i.test(scheme)) {
    throw new UsageError(`--store ${spec}: unknown URL scheme "${scheme}:"; use a PostgreSQL URL (postgres://user:password@host:5432/db) or a SQLite file path (e.g. .jianmu/runs.db)`);
  }
  if (scheme !== undefined) {
    const { PostgresRunStore } = await loadOptionalPeer({ entry: "jianmu --store postgres://...", packages: ["pg"] }, () => import("../queue/postgres/store.js"));
    return PostgresRunStore.connect({ connectionString: spec, create: !options.existing, ...(options.schema !== undefined ? { schema: options.schema } : {}) });
  }
  if (options.schema !== undefined) throw new UsageError("--schema applies to a PostgreSQL --store only");
  const path = resolve(options.cwd, spec);
  if (options.existing && !existsSync(path)) {
    throw new UsageError(`--store ${spec}: there is no run queue at ${path} (nothing was created); check the path, or start a worker (or jianmu run --store) on it first`);
  }
  const { SqliteRunStore } = await loadOptionalPeer({ entry: "jianmu --store <file.db>", packages: ["better-sqlite3"] }, () => import("../queue/sqlite/store.js"));
  return new SqliteRunStore({ path });
}
