/** A JSON-safe error, as kept in machine context and in the run's output. */
export interface ErrorInfo {
  name: string;
  message: string;
  kind?: string;
  status?: number;
  model?: string;
  endpoint?: string;
  /** The server's error code, e.g. `rate_limit_exceeded` or `tool_use_failed`. */
  code?: string;
  /** The tool provider (e.g. MCP server) that failed. */
  provider?: string;
}

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
