import { z } from "zod";
import { SqliteRunLog } from "../log/sqlite/sqlite-log.js";
import { CheckpointError } from "./store.js";

const OptionsSchema = z
  .object({
    /** The database file (created with its directory when missing), or ":memory:". */
    path: z.string().min(1, "must name the database file, e.g. .jianmu/runs.db"),
    /** How long a write waits for another process holding the lock. */
    busyTimeoutMs: z.number().int().min(0).default(5_000),
    /** Keep only the last N checkpoints of each run (and those a fork starts from). Default: every one. */
    keepCheckpoints: z.number().int().min(1).optional(),
    /** Delete a finished run once it has been finished this long (ms; machines/persistence/log/finished-retention.ts says what is kept). Default: kept forever. */
    keepFinishedMs: z.number().int().min(1).optional(),
  })
  .strict();
export type SqliteCheckpointStoreOptions = z.input<typeof OptionsSchema>;

function parse(options: SqliteCheckpointStoreOptions) {
  const parsed = OptionsSchema.safeParse(options);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new CheckpointError("(none)", `SqliteCheckpointStore: options.${issue.path.map(String).join(".") || "(all)"} ${issue.message} (options are { path, busyTimeoutMs?, keepCheckpoints?, keepFinishedMs? })`);
  }
  return parsed.data;
}

/**
 * The embedded default store: every run's log (its checkpoints, the conversation stored once, the
 * tool journal, forks and threads) in one SQLite file, the same layout as `SqliteRunStore`'s. WAL
 * mode with full sync: a journal row is on disk before the tool's result is used, and several
 * processes can share the file. Everything is synchronous, so a checkpoint is written before the
 * state it records moves on. A file written by the release before (layout 1) is migrated on open.
 */
export class SqliteCheckpointStore extends SqliteRunLog {
  constructor(options: SqliteCheckpointStoreOptions) {
    const { path, busyTimeoutMs, keepCheckpoints, keepFinishedMs } = parse(options);
    super({
      path,
      busyTimeoutMs,
      ...(keepCheckpoints !== undefined ? { keepCheckpoints } : {}),
      ...(keepFinishedMs !== undefined ? { keepFinishedMs } : {}),
      fail: (_kind, message, cause) => new CheckpointError("(none)", `SqliteCheckpointStore: ${message}`, { cause }),
    });
  }
}
