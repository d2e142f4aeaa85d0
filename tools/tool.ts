import { z } from "zod";
import { JianmuError } from "./jianmu-error.js";

/** A JSON Schema object, as sent to the model in a function-calling declaration. */
export type JsonSchema = { [key: string]: unknown };

/** Read-only all the way down: tools may look at the run state but never change it. */
export type DeepReadonly<T> = T extends (infer U)[]
  ? readonly DeepReadonly<U>[]
  : T extends object
    ? { readonly [K in keyof T]: DeepReadonly<T[K]> }
    : T;

/** What a tool gets besides its arguments. */
export interface ToolContext {
  /** Aborted when the call times out, the run is cancelled or the actor is stopped. */
  readonly signal: AbortSignal;
  /** The model's id for this call (also the id of the tool message that answers it). */
  readonly callId: string;
  /** A read-only view of the agent's state at the time of the call. */
  readonly state: DeepReadonly<Record<string, unknown>>;
}

export type ArgsCheck = { ok: true; value: Record<string, unknown> } | { ok: false; error: string };

/**
 * A tool as the executor sees it. `defineTool` builds one from a zod schema; providers (MCP)
 * build them from JSON Schema. Everything but `validate` and `execute` is plain data.
 */
export interface Tool {
  readonly name: string;
  readonly description: string;
  /** JSON Schema of the arguments object. */
  readonly inputSchema: JsonSchema;
  /** May run at the same time as other calls in one batch. */
  readonly parallelSafe: boolean;
  /** Tags merged into `toolEffects` when the tool runs, read by guards (e.g. `destructive`). */
  readonly effectTags: readonly string[];
  /** Per-call time limit; past it the call becomes an error observation. */
  readonly timeoutMs?: number;
  /** When true, a successful call ends the run with its output as the final answer. */
  readonly returnDirect?: boolean;
  /**
   * Running it twice has the same effect as running it once. Only such a tool is run again when a
   * restart interrupted it mid-call; any other gets an "outcome unknown" observation instead.
   */
  readonly idempotent?: boolean;
  /**
   * How many times a call that threw or timed out runs again before its failure is the observation
   * (1-10; only with `idempotent`: a failed call may have acted before it failed).
   */
  readonly retries?: number;
  /** The wait before the first retry, in ms (default 250), doubled before each next one, at most 30 s. */
  readonly retryDelayMs?: number;
  /** Checks (and may coerce or default) parsed arguments before the call. */
  validate(args: unknown): ArgsCheck;
  execute(args: Record<string, unknown>, ctx: ToolContext): unknown;
}

/**
 * The JSON-safe description of a tool that travels in machine context and prompts. Kept in
 * `loop.tools`, so saved snapshots hold it: restoring checks it with this schema, and `ToolInfo`
 * is its type (one definition for both).
 */
export const ToolInfoSchema = z.object({
  name: z.string().min(1),
  description: z.string(),
  /** JSON Schema of the arguments object. */
  inputSchema: z.record(z.string(), z.unknown()),
  parallelSafe: z.boolean(),
  effectTags: z.array(z.string()),
  timeoutMs: z.number().optional(),
  returnDirect: z.boolean().optional(),
});
export type ToolInfo = z.infer<typeof ToolInfoSchema>;

export function toolInfo(tool: Tool): ToolInfo {
  const info: ToolInfo = {
    name: tool.name,
    description: tool.description,
    inputSchema: tool.inputSchema,
    parallelSafe: tool.parallelSafe,
    effectTags: [...tool.effectTags],
  };
  if (tool.timeoutMs !== undefined) info.timeoutMs = tool.timeoutMs;
  if (tool.returnDirect) info.returnDirect = true;
  return info;
}

/** A tool definition that breaks the rules the model API enforces. Names the field and the fix. */
export class ToolDefinitionError extends JianmuError {
  static override readonly errorCode = "TOOL_DEFINITION_ERROR";
  override name = "ToolDefinitionError";
  constructor(
    readonly tool: string,
    readonly field: string,
    problem: string,
  ) {
    super(`tool "${tool}": ${field} ${problem}`);
  }
}

/** OpenAI (and most compatible servers) accept this and nothing else as a function name. */
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

export function checkToolName(name: unknown): string {
  if (typeof name !== "string" || !TOOL_NAME.test(name)) {
    throw new ToolDefinitionError(
      String(name),
      "name",
      "must be 1-64 characters of letters, digits, '_' or '-' (the model API rejects anything else)",
    );
  }
  return name;
}

/**
 * Check a tool built by hand or by a provider the way `defineTool` checks its definition: the
 * model API rejects a function whose parameters are not an object schema, and the executor calls
 * `validate` and `execute`. Returns the tool; throws `ToolDefinitionError` naming the field.
 */
export function checkTool(tool: Tool): Tool {
  if (tool === null || typeof tool !== "object") throw new ToolDefinitionError(String(tool), "(tool)", "must be a Tool object, e.g. from defineTool({ ... })");
  const name = checkToolName(tool.name);
  if (typeof tool.description !== "string") throw new ToolDefinitionError(name, "description", "must be a string: the model reads it to decide when to call the tool");
  const schema: unknown = tool.inputSchema;
  if (schema === null || typeof schema !== "object" || Array.isArray(schema) || (schema as JsonSchema)["type"] !== "object") {
    const got = schema === null || typeof schema !== "object" ? String(schema) : Array.isArray(schema) ? "an array" : `type ${JSON.stringify((schema as JsonSchema)["type"])}`;
    throw new ToolDefinitionError(name, "inputSchema", `must be a JSON Schema of type "object" (function arguments are always an object), got ${got}`);
  }
  for (const method of ["validate", "execute"] as const) {
    if (typeof tool[method] !== "function") throw new ToolDefinitionError(name, method, "must be a function");
  }
  checkRetries(name, tool);
  return tool;
}

/** The most retries a tool may ask for: past it, a failing service is better told to the model. */
export const MAX_RETRIES = 10;

/** `retries` and `retryDelayMs` as a tool definition may give them (throws `ToolDefinitionError` naming the field). */
function checkRetries(name: string, tool: { retries?: unknown; retryDelayMs?: unknown; idempotent?: unknown }): void {
  if (tool.retries !== undefined) {
    if (!Number.isInteger(tool.retries) || (tool.retries as number) < 1 || (tool.retries as number) > MAX_RETRIES) {
      throw new ToolDefinitionError(name, "retries", `must be a whole number from 1 to ${MAX_RETRIES}, got ${String(tool.retries)}`);
    }
    if (tool.idempotent !== true) {
      throw new ToolDefinitionError(name, "retries", "needs idempotent: true: a call that threw or timed out may have acted already, so it runs again only when running it twice is safe (set idempotent: true if it is, or leave retries out)");
    }
  }
  if (tool.retryDelayMs !== undefined) {
    if (tool.retries === undefined) throw new ToolDefinitionError(name, "retryDelayMs", "is only read with retries: set retries too, or leave it out");
    if (typeof tool.retryDelayMs !== "number" || !Number.isFinite(tool.retryDelayMs) || tool.retryDelayMs < 0) {
      throw new ToolDefinitionError(name, "retryDelayMs", `must be a number of milliseconds (0 or more), got ${String(tool.retryDelayMs)}`);
    }
  }
}

export interface ToolDefinition<P extends z.ZodObject> {
  name: string;
  description: string;
  parameters: P;
  execute(args: z.output<P>, ctx: ToolContext): unknown;
  parallelSafe?: boolean;
  effectTags?: readonly string[];
  timeoutMs?: number;
  returnDirect?: boolean;
  /** Safe to run again after a crash interrupted it (default false; see `Tool.idempotent`). */
  idempotent?: boolean;
  /** Run a call that threw or timed out again, up to this many times (needs `idempotent`; see `Tool.retries`). */
  retries?: number;
  /** The wait before the first retry (see `Tool.retryDelayMs`). */
  retryDelayMs?: number;
}

/** Describe a zod validation failure in one line the model (and a person) can act on. */
export function describeZodError(error: z.ZodError): string {
  return error.issues
    .map((issue) => `${issue.path.length > 0 ? issue.path.join(".") : "(arguments)"}: ${issue.message}`)
    .join("; ");
}

/** Build a tool from a zod object schema. Throws `ToolDefinitionError` for a bad definition. */
export function defineTool<P extends z.ZodObject>(definition: ToolDefinition<P>): Tool {
  const name = checkToolName(definition.name);
  if (typeof definition.description !== "string" || definition.description.trim() === "") {
    throw new ToolDefinitionError(name, "description", "must be a non-empty string: the model reads it to decide when to call the tool");
  }
  if (!(definition.parameters instanceof z.ZodObject)) {
    throw new ToolDefinitionError(name, "parameters", "must be a zod object schema (z.object({...})): function arguments are always a JSON object");
  }
  if (typeof definition.execute !== "function") {
    throw new ToolDefinitionError(name, "execute", "must be a function (args, ctx) => result");
  }
  if (definition.timeoutMs !== undefined && !(Number.isFinite(definition.timeoutMs) && definition.timeoutMs > 0)) {
    throw new ToolDefinitionError(name, "timeoutMs", `must be a positive number of milliseconds, got ${String(definition.timeoutMs)}`);
  }
  checkRetries(name, definition);
  const { $schema: _ignored, ...inputSchema } = z.toJSONSchema(definition.parameters, { io: "input", target: "draft-7" });
  const parameters = definition.parameters;
  const tool: Tool = {
    name,
    description: definition.description,
    inputSchema,
    parallelSafe: definition.parallelSafe ?? false,
    effectTags: Object.freeze([...(definition.effectTags ?? [])]),
    ...(definition.timeoutMs !== undefined ? { timeoutMs: definition.timeoutMs } : {}),
    ...(definition.returnDirect ? { returnDirect: true } : {}),
    ...(definition.idempotent ? { idempotent: true } : {}),
    ...(definition.retries !== undefined ? { retries: definition.retries } : {}),
    ...(definition.retryDelayMs !== undefined ? { retryDelayMs: definition.retryDelayMs } : {}),
    validate(args) {
      const parsed = parameters.safeParse(args);
      return parsed.success ? { ok: true, value: parsed.data as Record<string, unknown> } : { ok: false, error: describeZodError(parsed.error) };
    },
    execute: (args, ctx) => definition.execute(args as z.output<P>, ctx),
  };
  return Object.freeze(tool);
}
