/**
 * `jianmu/mcp`: MCP servers as tool providers (`mcpToolProvider`). Needs the optional package
 * @modelcontextprotocol/sdk (`npm install @modelcontextprotocol/sdk`); `jianmu` itself never loads it.
 */
import { loadOptionalPeer } from "./tools/optional-peer.js";
import type * as Mcp from "./tools/mcp/index.js";

const mcp: typeof Mcp = await loadOptionalPeer({ entry: "jianmu/mcp", packages: ["@modelcontextprotocol/sdk"] }, () => import("./tools/mcp/index.js"));

export const { mcpToolProvider, McpOptionsError, McpProviderOptionsSchema, McpServerError, McpToolError, effectsOf, assignToolNames, sanitizeToolName } = mcp;
// The classes are types too (for annotations); the values above are the loaded classes themselves.
export type McpOptionsError = Mcp.McpOptionsError;
export type McpServerError = Mcp.McpServerError;
export type McpToolError = Mcp.McpToolError;
export type {
  McpToolProvider,
  SkippedMcpTool,
  McpHttpTransport,
  McpProviderOptions,
  McpStdioTransport,
  McpToolFilter,
  ToolEffects,
  NamedTool,
} from "./tools/mcp/index.js";
export { OptionalPeerMissingError } from "./tools/optional-peer.js";
