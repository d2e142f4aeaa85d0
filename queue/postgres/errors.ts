import { errorText, RunQueueError } from "../errors.js";

/** A PostgreSQL failure turned into a RunQueueError that says what to fix. */
export function explainPgError(error: unknown, where: { url: string; schema: string; user?: string; database?: string }): RunQueueError {
  if (error instanceof RunQueueError) return error;
  const code = (error as { code?: unknown } | undefined)?.code;
  const text = errorText(error);
  switch (code) {
    case "ECONNREFUSED":
    case "ENOTFOUND":
    case "EAI_AGAIN":
    case "ETIMEDOUT":
    case "ECONNRESET":
      return new RunQueueError("connection", `cannot reach PostgreSQL at ${where.url} (${text}): is the server running, and are the host and port in connectionString right?`, { cause: error });
    case "3D000":
      return new RunQueueError("connection", `${text} on ${where.url}: create it (createdb ${where.database ?? "<name>"}) or fix the database name in connectionString`, { cause: error });
    case "28P01":
    case "28000":
      return new RunQueueError("connection", `PostgreSQL refused the login at ${where.url} (${text}): check the user and password in connectionString`, { cause: error });
    case "42501":
      return new RunQueueError(
        "permission",
        `role ${where.user ?? "(this user)"} may not create or use schema "${where.schema}" in database ${where.database ?? "(this database)"} (${text}): ` +
          `grant it (GRANT CREATE ON DATABASE ${where.database ?? "<db>"} TO ${where.user ?? "<role>"}, or GRANT USAGE, CREATE ON SCHEMA ${where.schema} and rights on its tables), ` +
          "or connect once as the schema's owner so the tables exist",
        { cause: error },
      );
    case "JIANMU_NEWER":
      return new RunQueueError("schema", text, { cause: error });
    default:
      if (/timeout|terminat|Connection terminated|not queryable|closed/i.test(text)) {
        return new RunQueueError("connection", `PostgreSQL at ${where.url} failed mid-call (${text}); the call can be retried once it is reachable`, { cause: error });
      }
      return new RunQueueError("connection", `PostgreSQL at ${where.url}: ${text}`, { cause: error });
  }
}
