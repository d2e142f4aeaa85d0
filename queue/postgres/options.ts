import type pg from "pg";
import { z } from "zod";

/** A plain identifier: no quoting needed, no way to smuggle SQL in through it. */
export const SchemaNameSchema = z
  .string()
  .regex(/^[a-z_][a-z0-9_]*$/, "must be a plain lower-case identifier (letters, digits and _, not starting with a digit), e.g. \"jianmu\"")
  .max(40, "must be at most 40 characters (it also names the notification channel)");

function isPostgresUrl(text: string): boolean {
  if (!/^postgres(ql)?:\/\//.test(text)) return false;
  try {
    const url = new URL(text);
    return url.hostname !== "" || url.searchParams.has("host");
  } catch {
    return false;
  }
}

export const ConnectOptionsSchema = z
  .object({
    connectionString: z
      .string({ error: "is required, e.g. postgres://user:password@localhost:5432/app" })
      .refine(isPostgresUrl, "must be a PostgreSQL URL such as postgres://user:password@localhost:5432/app (check the scheme, host and port)"),
    /** The schema holding jianmu's tables (created when missing, unless `create` is false). */
    schema: SchemaNameSchema.default("jianmu"),
    /** false: only connect to a queue whose tables exist (a reading command); a missing schema is a RunQueueError, and nothing is created. */
    create: z.boolean().default(true),
    /** Your own pool (its connection string is then not used for queries); `close()` leaves it open. */
    pool: z.custom<pg.Pool>((value) => typeof value === "object" && value !== null && typeof (value as pg.Pool).query === "function", "must be a pg.Pool").optional(),
    /** Connections of the store's own pool. */
    maxConnections: z.number().int().min(1).max(1_000).default(10),
    /** How long a connection attempt may take. */
    connectTimeoutMs: z.number().int().min(100).default(5_000),
    /** `wait()` looks at the run at least this often (notifications usually answer sooner). */
    pollMs: z.number().int().min(10).default(1_000),
    /** LISTEN for notifications (turn off behind a pooler in transaction mode: workers then poll). */
    listen: z.boolean().default(true),
  })
  .strict();
export type PostgresRunStoreOptions = z.input<typeof ConnectOptionsSchema>;
export type ResolvedOptions = z.output<typeof ConnectOptionsSchema>;

/** The URL with its password hidden, for messages. */
export function redactUrl(text: string): string {
  try {
    const url = new URL(text);
    if (url.password) url.password = "***";
    return url.toString();
  } catch {
    return "(unparseable connection string)";
  }
}
