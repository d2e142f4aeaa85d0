import { errorText, RunQueueError } from "../errors.js";

/**
 * What kind of PostgreSQL failure an error is, by its SQLSTATE (or Node's socket error code), so the
 * store can tell a database that is away for a moment (retry inside the lease) from data it will
 * never accept (the caller's to fix) and from a setup to fix.
 */
export type PgFault = "unreachable" | "tooManyClients" | "transient" | "auth" | "noDatabase" | "permission" | "data" | "schema" | "newerSchema" | "other";

const SOCKET_CODES = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "ETIMEDOUT", "ECONNRESET", "EPIPE", "EHOSTUNREACH", "ENETUNREACH", "ECONNABORTED"]);
/** The driver's own words for a connection that broke or never came (pg and pg-pool set no code on them). */
const BROKEN_CONNECTION = /Connection terminated|timeout exceeded when trying to connect|encountered a connection error and is not queryable/i;

export function pgFaultOf(error: unknown): PgFault {
  const code = (error as { code?: unknown } | undefined)?.code;
  if (typeof code === "string") {
    if (SOCKET_CODES.has(code)) return "unreachable";
    if (code === "53300") return "tooManyClients";
    // Connection exceptions, the server shutting down or starting up, out of resources, serialization and deadlocks.
    if (code.startsWith("08") || code.startsWith("57P") || code.startsWith("53") || code === "40001" || code === "40P01") return "transient";
    if (code === "28P01" || code === "28000") return "auth";
    if (code === "3D000") return "noDatabase";
    if (code === "42501") return "permission";
    // Data exceptions (a NUL or a lone surrogate where the type refuses it, a bad value) and program limits (a string too long).
    if (code.startsWith("22") || code.startsWith("54")) return "data";
    if (code.startsWith("42")) return "schema";
    if (code === "JIANMU_NEWER") return "newerSchema";
  }
  return BROKEN_CONNECTION.test(errorText(error)) ? "transient" : "other";
}

/** A failure that may pass if the same statement is tried again shortly (the server restarting, a full pool, a dropped socket). */
export function isTransientPgFault(error: unknown): boolean {
  const fault = pgFaultOf(error instanceof RunQueueError && error.cause !== undefined ? error.cause : error);
  return fault === "unreachable" || fault === "tooManyClients" || fault === "transient";
}

/** What error texts may say about the server: nothing by default, host and database with `nameServerInErrors`. */
export interface ServerNaming {
  /** ` at host:port/database` when the store was told to name the server, else "". */
  at: string;
  user?: string | undefined;
  database?: string | undefined;
  maxConnections: number;
  schema: string;
  /** Strings that must never appear in a message (the connection string, its password). */
  secrets: readonly string[];
}

function scrub(text: string, secrets: readonly string[]): string {
  let clean = text;
  for (const secret of secrets) if (secret.length >= 3) clean = clean.split(secret).join("***");
  return clean;
}

/**
 * A PostgreSQL failure turned into a RunQueueError that says what to fix, prefixed with `where` (the
 * call and the value that failed: `submit: input`, `finish: output`). No connection string, no
 * password, and by default no host, database or role in the text: errors travel to logs, HTTP
 * bodies and (through a tool's observation) to the model provider.
 */
export function explainPgError(error: unknown, server: ServerNaming, where?: string): RunQueueError {
  if (error instanceof RunQueueError) return error;
  const text = scrub(errorText(error), server.secrets);
  const code = (error as { code?: unknown } | undefined)?.code;
  const prefix = where ? `${where}: ` : "";
  const make = (problem: RunQueueError["problem"], message: string) => new RunQueueError(problem, scrub(prefix + message, server.secrets), { cause: error });
  switch (pgFaultOf(error)) {
    case "unreachable":
      return make("connection", `cannot reach the PostgreSQL server${server.at} (${String(code)}): is it running, and are the host and port in connectionString right?`);
    case "tooManyClients":
      return make(
        "connection",
        `the PostgreSQL server${server.at} refused a connection: too many clients already (its max_connections is used up). ` +
          `Each store opens up to maxConnections (here ${server.maxConnections}) plus 1 for LISTEN: lower maxConnections, run fewer stores per server, ` +
          "raise max_connections on the server, or put PgBouncer in front (with listen: false); docs/scale.md has a sizing table",
      );
    case "transient":
      return make("connection", `PostgreSQL${server.at} failed mid-call (${text}); the call can be retried once it is reachable`);
    case "noDatabase":
      return make("connection", `the database${server.database ? ` ${server.database}` : ""} does not exist${server.at}: create it (createdb ${server.database ?? "<name>"}) or fix the database name in connectionString`);
    case "auth":
      return make("connection", `PostgreSQL${server.at} refused the login: check the user and password in connectionString (or PGPASSWORD)`);
    case "permission": {
      const role = server.user ?? "<role>";
      const db = server.database ?? "<database>";
      return make(
        "permission",
        `role ${role} may not create or use schema "${server.schema}" in database ${db}: ` +
          `grant it (GRANT CREATE ON DATABASE ${db} TO ${role}, or GRANT USAGE, CREATE ON SCHEMA ${server.schema} and rights on its tables), ` +
          "or connect once as the schema's owner so the tables exist",
      );
    }
    case "data":
      return make("invalid_input", `PostgreSQL cannot store this value (${text}, SQLSTATE ${String(code)}); it is the data, not the connection: retrying will not help`);
    case "schema":
      return make("schema", `PostgreSQL refused a statement on schema "${server.schema}" (${text}): was the schema changed or dropped by hand? Connect again to migrate it`);
    case "newerSchema":
      return make("schema", text);
    case "other":
      return make("connection", `PostgreSQL${server.at} failed: ${text}`);
  }
}
