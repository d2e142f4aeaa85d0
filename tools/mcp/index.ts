/**
 * MCP servers as jianmu tool providers.
 *
 * ```ts
 * const files = mcpToolProvider({
 *   name: "files",
 *   transport: { type: "stdio", command: process.execPath, args: ["server.js"], env: { ROOT: "/srv" } },
 *   prefix: "files_",
 *   filter: ["read_file", "list_directory"],
 * });
 * const agent = createReactMachine({ modelClient, toolProviders: [files] });
 * ```
 *
 * Choices, in short:
 * - Environment (stdio): the server gets the SDK's safe defaults (HOME, LOGNAME, PATH, SHELL,
 *   TERM, USER on POSIX) plus `transport.env`, and nothing else of this process's environment.
 * - Names: `${prefix}${name}` with the prefix used as given (bring your own separator); any
 *   character outside [a-zA-Z0-9_-] becomes '_', names are cut to 64 characters, and clashes get
 *   `_2`, `_3`, ... A map leads back to the server's name for `tools/call` (`mcpName()`).
 * - Filter: judged by the server's own tool name; an array naming a tool the server lacks is an
 *   error at start. Tools that can only run as MCP tasks are left out (`skipped`).
 * - Annotations, read with the MCP defaults: `readOnlyHint` → `parallelSafe` (and idempotent);
 *   `destructiveHint` (default true unless read-only) → tag "destructive"; `openWorldHint`
 *   (default true) → tag "network"; `idempotentHint` → `idempotent`.
 * - Arguments are checked against the server's JSON Schema with the SDK's Ajv validator before
 *   the call; a bad call never reaches the server.
 * - Results: text parts as is, other parts (image, audio, embedded resource, resource link)
 *   summarized in words, one part per line; `isError: true` throws, so the call is a failed one.
 * - `close` ends the session and, for stdio, makes sure the process is gone (SIGKILL if needed).
 *   One provider can serve concurrent runs; the last `close` ends the connection.
 * - The tool list is read once per start; `tools/list_changed` notifications are not followed.
 */
export { mcpToolProvider } from "./mcp-provider.js";
export type { McpToolProvider, SkippedMcpTool } from "./mcp-provider.js";
export { McpOptionsError, McpProviderOptionsSchema } from "./options.js";
export type { McpHttpTransport, McpProviderOptions, McpStdioTransport, McpToolFilter } from "./options.js";
export { McpServerError } from "./connection.js";
export { McpToolError } from "./result.js";
export { effectsOf } from "./mcp-tool.js";
export type { ToolEffects } from "./mcp-tool.js";
export { assignToolNames, sanitizeToolName } from "./names.js";
export type { NamedTool } from "./names.js";
