import type pg from "pg";
import { z } from "zod";
import { UnknownAgentsSchema } from "../schemas.js";
import type { ServerNaming } from "./errors.js";

/** Pool connections per store by default: with the LISTEN connection, 5 per worker process. */
export const DEFAULT_MAX_CONNECTIONS = 4;

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
    /**
     * Connections of the store's own pool (the LISTEN connection is one more). The default keeps ten
     * worker processes at 50 connections, half of a stock server's max_connections (docs/scale.md sizes it).
     */
    maxConnections: z.number().int().min(1).max(1_000).default(DEFAULT_MAX_CONNECTIONS),
    /** How long a connection attempt may take. */
    connectTimeoutMs: z.number().int().min(100).default(5_000),
    /** `wait()` looks at the run at least this often (notifications usually answer sooner). */
    pollMs: z.number().int().min(10).default(1_000),
    /** LISTEN for notifications (turn off behind a pooler in transaction mode: workers then poll). */
    listen: z.boolean().default(true),
    /**
     * Send statements as named prepared statements, parsed and planned once per connection instead of
     * at every call. Turn off behind a pooler in transaction mode that does not keep prepared
     * statements across its server connections (PgBouncer before 1.21).
     */
    prepare: z.boolean().default(true),
    /** Keep only the last N checkpoints of each run (and those a fork starts from). Default: every one. */
    keepCheckpoints: z.number().int().min(1).optional(),
    /** Delete a finished run once it has been finished this long (ms; machines/persistence/log/finished-retention.ts says what is kept). Default: kept forever. */
    keepFinishedMs: z.number().int().min(1).optional(),
    /**
     * Name the server (host, port, database, role) in error messages. Off by default: errors reach
     * logs, HTTP bodies and model prompts. The connection string and its password never appear.
     */
    nameServerInErrors: z.boolean().default(false),
    unknownAgents: UnknownAgentsSchema,
  })
  .strict();
export type PostgresRunStoreOptions = z.input<typeof ConnectOptionsSchema>;
export type ResolvedOptions = z.output<typeof ConnectOptionsSchema>;

/** What error texts may say about the server (see `explainPgError`): names only when asked, secrets never. */
export function serverNaming(options: ResolvedOptions): ServerNaming {
  const url = new URL(options.connectionString);
  const password = url.password ? decodeURIComponent(url.password) : (url.searchParams.get("password") ?? undefined);
  const secrets = [options.connectionString, ...(password ? [password, encodeURIComponent(password)] : [])];
  const base = { maxConnections: options.maxConnections, schema: options.schema, secrets };
  if (!options.nameServerInErrors) return { ...base, at: "" };
  const host = url.hostname || url.searchParams.get("host") || "localhost";
  const database = decodeURIComponent(url.pathname.slice(1)) || undefined;
  return {
    ...base,
    at: ` at ${host}${url.port ? `:${url.port}` : ""}${database ? `/${database}` : ""}`,
    user: decodeURIComponent(url.username) || process.env.PGUSER || undefined,
    database,
  };
}
