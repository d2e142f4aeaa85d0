import type { CallToolResult, ContentBlock } from "@modelcontextprotocol/sdk/types.js";
import { JianmuError } from "../jianmu-error.js";
import { base64Bytes, formatBytes } from "../byte-size.js";

export { base64Bytes, formatBytes } from "../byte-size.js";

/**
 * One content part as the model reads it: text as is, anything else summarized in words (the
 * model cannot see binary data, and an inline blob would only burn tokens).
 */
export function describeContent(part: ContentBlock): string {
  switch (part.type) {
    case "text":
      return part.text;
    case "image":
    case "audio":
      return `[${part.type}: ${part.mimeType}, ${formatBytes(base64Bytes(part.data))}]`;
    case "resource": {
      const resource = part.resource;
      const mime = resource.mimeType ? `, ${resource.mimeType}` : "";
      const size = "text" in resource ? `${resource.text.length} characters of text` : formatBytes(base64Bytes(resource.blob));
      return `[embedded resource: ${resource.uri}${mime}, ${size}]`;
    }
    case "resource_link": {
      const mime = part.mimeType ? `, ${part.mimeType}` : "";
      const about = part.description ? ` — ${part.description}` : "";
      return `[resource link: ${part.name} <${part.uri}>${mime}${about}]`;
    }
    default: {
      const type = (part as { type?: unknown }).type;
      return `[${typeof type === "string" ? type : "unknown"} content]`;
    }
  }
}

/**
 * The observation for a tool result: every part in order, one per line. A result with no
 * content but structured content reads as that JSON.
 */
export function resultText(result: Pick<CallToolResult, "content" | "structuredContent">): string {
  const parts = result.content ?? [];
  if (parts.length === 0) {
    return result.structuredContent !== undefined ? JSON.stringify(result.structuredContent) : "(the tool returned no content)";
  }
  return parts.map(describeContent).join("\n");
}

/** A tool that reported failure (`isError: true`): thrown so the executor records a failed call. */
export class McpToolError extends JianmuError {
  static override readonly errorCode = "MCP_TOOL_ERROR";
  override name = "McpToolError";
  constructor(
    readonly server: string,
    readonly tool: string,
    message: string,
  ) {
    super(message);
  }
}
