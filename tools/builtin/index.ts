/**
 * The tools shipped with jianmu and used by the CLI demo.
 *
 * No built-in tool touches the network: the calculator and the clock are pure computation, and
 * the file tools read only inside the sandbox directory they are given. Tools that need the
 * network (web search, HTTP fetch, MCP servers) are opt-in and configured elsewhere.
 */
import type { Tool } from "../tool.js";
import { calculatorTool } from "./calculator.js";
import { currentTimeTool } from "./current-time.js";
import { createListFilesTool } from "./list-files.js";
import { createReadFileTool } from "./read-file.js";

export { calculatorTool, evaluateExpression, ExpressionError, MAX_EXPRESSION_LENGTH, MAX_NESTING_DEPTH } from "./calculator.js";
export type { CalculatorResult } from "./calculator.js";
export { createCurrentTimeTool, currentTimeTool, describeTime } from "./current-time.js";
export type { CurrentTimeOptions, CurrentTimeResult } from "./current-time.js";
export { createReadFileTool, DEFAULT_MAX_BYTES } from "./read-file.js";
export type { ReadFileOptions, ReadFileResult } from "./read-file.js";
export { createListFilesTool, DEFAULT_MAX_ENTRIES } from "./list-files.js";
export type { ListedEntry, ListFilesOptions, ListFilesResult } from "./list-files.js";
export { SandboxError } from "./sandbox.js";

/** Every built-in tool's name, in the order `builtinTools` returns them. */
export const BUILTIN_TOOL_NAMES = ["calculator", "current_time", "read_file", "list_files"] as const;
export type BuiltinToolName = (typeof BUILTIN_TOOL_NAMES)[number];

export interface BuiltinToolsOptions {
  /** Sandbox directory for read_file and list_files; without it those two are left out. */
  root?: string;
  /** read_file's per-call byte limit (default 64 KiB). */
  maxBytes?: number;
}

/** The default tool set: calculator and current_time, plus read_file and list_files when a root is given. */
export function builtinTools(options: BuiltinToolsOptions = {}): Tool[] {
  const tools: Tool[] = [calculatorTool, currentTimeTool];
  if (options.root !== undefined) {
    const readOptions = options.maxBytes === undefined ? { root: options.root } : { root: options.root, maxBytes: options.maxBytes };
    tools.push(createReadFileTool(readOptions), createListFilesTool({ root: options.root }));
  }
  return tools;
}
