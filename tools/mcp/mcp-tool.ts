import type { CallToolResult, Tool as McpToolDefinition } from "@modelcontextprotocol/sdk/types.js";
import type { Tool, ToolContext } from "../tool.js";
import { McpToolError, resultText } from "./result.js";
import { argsChecker, modelSchema } from "./schema-check.js";

export type { McpToolDefinition };

/** Calls one tool on the server by its MCP name. */
export type McpCall = (mcpName: string, args: Record<string, unknown>, signal: AbortSignal) => Promise<CallToolResult>;

export interface ToolEffects {
  parallelSafe: boolean;
  effectTags: string[];
  idempotent: boolean;
}

/**
 * What the MCP annotations say about a tool, read with the MCP spec's defaults (a tool that says
 * nothing is assumed to write, to be destructive and to reach the open world):
 * - `readOnlyHint: true` → `parallelSafe` (it changes nothing, so calls may overlap);
 * - `destructiveHint` (default true, meaningful only when not read-only) → tag "destructive";
 * - `openWorldHint` (default true) → tag "network";
 * - `idempotentHint` (default false), or being read-only → `idempotent` (safe to run again after a restart).
 * Annotations are hints from the server: guards that must be strict should not rely on them alone.
 */
export function effectsOf(annotations: McpToolDefinition["annotations"]): ToolEffects {
  const readOnly = annotations?.readOnlyHint === true;
  const effectTags: string[] = [];
  if (!readOnly && (annotations?.destructiveHint ?? true)) effectTags.push("destructive");
  if (annotations?.openWorldHint ?? true) effectTags.push("network");
  return { parallelSafe: readOnly, effectTags, idempotent: readOnly || annotations?.idempotentHint === true };
}

export interface McpToolOptions {
  /** The name the model sees (already prefixed and sanitized). */
  name: string;
  /** The MCP server, for descriptions and errors. */
  server: string;
  call: McpCall;
  timeoutMs?: number;
  /** Retries for a tool the server marks idempotent (left off any other). */
  retries?: { retries: number; retryDelayMs?: number };
}

/** A jianmu tool backed by one MCP server tool (built directly: its schema is JSON Schema, not zod). */
export function mcpTool(definition: McpToolDefinition, options: McpToolOptions): Tool {
  const inputSchema = modelSchema(definition.inputSchema);
  const check = argsChecker(inputSchema);
  const { parallelSafe, effectTags, idempotent } = effectsOf(definition.annotations);
  const description = definition.description?.trim() || definition.title?.trim() || `The "${definition.name}" tool of MCP server "${options.server}".`;
  const mcpName = definition.name;
  const tool: Tool = {
    name: options.name,
    description,
    inputSchema,
    parallelSafe,
    effectTags: Object.freeze(effectTags),
    ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
    ...(idempotent ? { idempotent: true } : {}),
    ...(idempotent && options.retries ? options.retries : {}),
    validate: check,
    async execute(args: Record<string, unknown>, ctx: ToolContext) {
      const result = await options.call(mcpName, args, ctx.signal);
      const text = resultText(result);
      if (result.isError === true) throw new McpToolError(options.server, mcpName, text);
      return text;
    },
  };
  return Object.freeze(tool);
}
