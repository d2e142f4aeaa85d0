import { z } from "zod";
import { JianmuError } from "../jianmu-error.js";
import { MAX_RETRIES } from "../tool.js";

/** Letters, digits, '_' and '-': what the model API accepts in a function name. */
const NAME_SAFE = /^[a-zA-Z0-9_-]+$/;

const StdioTransportSchema = z.strictObject({
  type: z.literal("stdio"),
  command: z
    .string({ error: "must be a string: the executable that starts the server (e.g. process.execPath, \"npx\")" })
    .trim()
    .min(1, { error: "must be a non-empty string: the executable that starts the server (e.g. process.execPath, \"npx\")" }),
  args: z.array(z.string({ error: "must be a string (pass each command-line argument as its own string)" })).optional(),
  /**
   * The server's whole environment besides the SDK's safe defaults (HOME, LOGNAME, PATH, SHELL,
   * TERM, USER on POSIX). Nothing else of this process's environment is passed on: an API key in
   * your shell stays out of a third-party server unless you hand it over here.
   */
  env: z.record(z.string(), z.string({ error: "must map each variable name to a string value" })).optional(),
  cwd: z.string().min(1, { error: "must be a non-empty directory path (or leave it out to use the current one)" }).optional(),
  /** "capture" (default): kept in memory and quoted when the server fails to start; "inherit": printed to this process's stderr. */
  stderr: z.enum(["capture", "inherit", "ignore"], { error: 'must be "capture", "inherit" or "ignore"' }).optional(),
});

const HttpTransportSchema = z.strictObject({
  type: z.literal("http"),
  url: z.string({ error: "must be the server's streamable HTTP endpoint, e.g. \"http://127.0.0.1:3001/mcp\"" }).refine(isHttpUrl, {
    error: "must be an http:// or https:// URL, e.g. \"http://127.0.0.1:3001/mcp\"",
  }),
  /** Sent with every request (e.g. Authorization). Never echoed in errors or telemetry. */
  headers: z.record(z.string(), z.string({ error: "must map each header name to a string value" })).optional(),
});

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === "http:" || url.protocol === "https:";
  } catch {
    return false;
  }
}

/** Which server tools to offer, judged by the server's own tool name (before prefixing). */
export type McpToolFilter = ((toolName: string) => boolean) | readonly string[];

const FilterSchema = z.union(
  [
    z.custom<(toolName: string) => boolean>((value) => typeof value === "function"),
    z.array(z.string()).readonly(),
  ],
  { error: "must be a function (toolName) => boolean or an array of the server's tool names to keep" },
);

/** A tool's retries obey `defineTool`'s bound (tools/tool.ts). */
const RETRIES_RANGE = { error: `must be a whole number from 1 to ${MAX_RETRIES}` };

export const McpProviderOptionsSchema = z.strictObject({
  name: z
    .string({ error: "must be a string naming the server in errors and telemetry, e.g. \"everything\"" })
    .trim()
    .min(1, { error: "must be a non-empty string naming the server in errors and telemetry, e.g. \"everything\"" }),
  transport: z.discriminatedUnion("type", [StdioTransportSchema, HttpTransportSchema], {
    error: 'must be { type: "stdio", command, args?, env?, cwd? } or { type: "http", url, headers? }',
  }),
  /** Put in front of every tool name as is: include your own separator, e.g. "files_". */
  prefix: z
    .string()
    .max(48, { error: "must be at most 48 characters, so prefixed names fit the model API's 64-character limit" })
    .regex(NAME_SAFE, { error: "may hold only letters, digits, '_' and '-' (the model API rejects anything else in a tool name)" })
    .optional(),
  filter: FilterSchema.optional(),
  /** Per-call limit in milliseconds; past it the call becomes an error observation (and is cancelled on the server). */
  timeoutMs: z.number().positive({ error: "must be a positive number of milliseconds" }).optional(),
  /** Limit for connecting and listing the tools (default 30 000 ms). */
  startupTimeoutMs: z.number().positive({ error: "must be a positive number of milliseconds" }).optional(),
  /** Run a call that failed or timed out again, up to this many times: only tools the server marks idempotent or read-only. */
  retries: z.number().int(RETRIES_RANGE).min(1, RETRIES_RANGE).max(MAX_RETRIES, RETRIES_RANGE).optional(),
  /** The wait before the first retry, in ms (doubled before each next one). */
  retryDelayMs: z.number().min(0, { error: "must be a number of milliseconds (0 or more)" }).optional(),
});

export type McpStdioTransport = z.input<typeof StdioTransportSchema>;
export type McpHttpTransport = z.input<typeof HttpTransportSchema>;

export interface McpProviderOptions {
  /** Names the server in errors and telemetry. */
  name: string;
  transport: McpStdioTransport | McpHttpTransport;
  /** Put in front of every tool name as is: include your own separator, e.g. "files_". */
  prefix?: string;
  /** Which tools to offer, by the server's own tool name. An array naming a tool the server lacks is an error. */
  filter?: McpToolFilter;
  /** Per-call limit in milliseconds. Without it the SDK's request timeout (60 s) applies. */
  timeoutMs?: number;
  /** Limit for connecting and listing the tools (default 30 000 ms). */
  startupTimeoutMs?: number;
  /**
   * Run a call that failed or timed out again, up to this many times (1-10), after a wait that
   * doubles: only for the tools the server marks idempotent or read-only (`idempotentHint`,
   * `readOnlyHint`); a call of any other tool may have acted before it failed.
   */
  retries?: number;
  /** The wait before the first retry, in ms (default 250). */
  retryDelayMs?: number;
}

export type ParsedMcpOptions = z.output<typeof McpProviderOptionsSchema>;

/** Bad options for `mcpToolProvider`. Names the field and how to fix it. */
export class McpOptionsError extends JianmuError {
  static override readonly errorCode = "MCP_OPTIONS_ERROR";
  override name = "McpOptionsError";
  constructor(
    readonly field: string,
    problem: string,
  ) {
    super(`mcpToolProvider: options.${field} ${problem}`);
  }
}

export function parseMcpOptions(options: unknown): ParsedMcpOptions {
  if (!options || typeof options !== "object") {
    throw new McpOptionsError("(all)", 'must be an object such as { name: "everything", transport: { type: "stdio", command: "npx", args: [...] } }');
  }
  const parsed = McpProviderOptionsSchema.safeParse(options);
  if (parsed.success) {
    if (parsed.data.retryDelayMs !== undefined && parsed.data.retries === undefined) return fail("retryDelayMs", "is only read with retries: set retries too, or leave it out");
    return parsed.data;
  }
  const issue = parsed.error.issues[0]!;
  if (issue.code === "unrecognized_keys") {
    const where = issue.path.length > 0 ? `${issue.path.join(".")}.` : "";
    return fail(`${where}${issue.keys[0]}`, "is not an option here: check its spelling (see McpProviderOptions)");
  }
  return fail(issue.path.length > 0 ? issue.path.join(".") : "(all)", issue.message);
}

function fail(field: string, problem: string): never {
  throw new McpOptionsError(field, problem);
}
