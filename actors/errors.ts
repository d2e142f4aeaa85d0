import { z } from "zod";

/**
 * A JSON-safe error, as kept in machine context (a failed run's `termination.error`, so saved
 * snapshots hold it) and in the run's output. Restoring checks it with this schema; `ErrorInfo` is its type.
 */
export const ErrorInfoSchema = z.object({
  name: z.string(),
  message: z.string(),
  kind: z.string().optional(),
  status: z.number().optional(),
  model: z.string().optional(),
  endpoint: z.string().optional(),
  /** The server's error code, e.g. `rate_limit_exceeded` or `tool_use_failed`. */
  code: z.string().optional(),
  /** The tool provider (e.g. MCP server) that failed. */
  provider: z.string().optional(),
});
export type ErrorInfo = z.infer<typeof ErrorInfoSchema>;

/** Keep what a person needs from an error (and nothing that does not survive JSON). */
export function toErrorInfo(error: unknown): ErrorInfo {
  if (error instanceof Error) {
    const info: ErrorInfo = { name: error.name, message: error.message };
    const extra = error as Error & Partial<Record<keyof ErrorInfo, unknown>>;
    for (const key of ["kind", "code", "model", "endpoint", "provider"] as const) {
      const value = extra[key];
      if (typeof value === "string") info[key] = value;
    }
    if (typeof extra.status === "number") info.status = extra.status;
    return info;
  }
  return { name: "Error", message: typeof error === "string" ? error : (JSON.stringify(error) ?? String(error)) };
}
