import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Tool } from "../tool.js";
import type { ToolProvider } from "../provider.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { describeCause, McpServerError, openConnection, stderrNote, type McpConnection } from "./connection.js";
import { mcpTool, type McpCall, type McpToolDefinition } from "./mcp-tool.js";
import { assignToolNames } from "./names.js";
import { parseMcpOptions, type McpProviderOptions, type ParsedMcpOptions } from "./options.js";

const DEFAULT_STARTUP_MS = 30_000;
/** A server that keeps handing out cursors is broken; stop listing rather than loop forever. */
const MAX_PAGES = 1000;

/** A server tool the provider leaves out, and why. */
export interface SkippedMcpTool {
  mcpName: string;
  reason: string;
}

/** An MCP server as a jianmu tool provider. */
export interface McpToolProvider extends ToolProvider<unknown> {
  readonly name: string;
  /** The server process id (stdio); kept after `close` so you can check that the process is gone. */
  readonly pid: number | undefined;
  /** The server's own name for one of this provider's tools, by the name the model sees. */
  mcpName(toolName: string): string | undefined;
  /** Tools the server offers that are left out (filtered, or needing MCP tasks, which jianmu does not drive). */
  readonly skipped: readonly SkippedMcpTool[];
}

interface Started {
  connection: McpConnection;
  tools: readonly Tool[];
  mcpNames: ReadonlyMap<string, string>;
  skipped: readonly SkippedMcpTool[];
}

/**
 * Offer the tools of an MCP server to an agent (stdio: a spawned command; http: streamable HTTP).
 * Tool names are `${prefix}${serverName}`, sanitized to what the model API accepts; arguments are
 * checked against the server's JSON Schema before each call.
 *
 * One provider may serve several runs at once (e.g. two actors of one machine): they share the
 * connection, which `initialize` opens for the first user and `close` ends after the last.
 */
export function mcpToolProvider(options: McpProviderOptions): McpToolProvider {
  const parsed = parseMcpOptions(options);
  const server = parsed.name;
  let users = 0;
  let starting: Promise<Started> | undefined;
  /** Aborts the start under way: the last close does, so a cancelled run need not wait out a hung server. */
  let stopStarting: AbortController | undefined;
  let current: Started | undefined;
  let closing: Promise<void> = Promise.resolve();
  let lastPid: number | undefined;

  const initialize = async (): Promise<void> => {
    users += 1;
    if (!starting) {
      const stop = new AbortController();
      stopStarting = stop;
      const attempt = start(parsed, stop.signal, (pid) => {
        lastPid = pid;
      });
      attempt.finally(() => {
        if (stopStarting === stop) stopStarting = undefined;
      }).catch(() => undefined);
      starting = attempt;
      attempt.catch(() => {
        // Let the next initialize try again instead of replaying this failure.
        if (starting === attempt) starting = undefined;
      });
    }
    const attempt = starting;
    const started = await attempt;
    // A close that ended this connection meanwhile must not see it come back.
    if (starting === attempt) current = started;
  };

  const close = async (): Promise<void> => {
    if (users === 0) return closing;
    users -= 1;
    if (users > 0) return;
    const pending = starting;
    starting = undefined;
    current = undefined;
    stopStarting?.abort(new Error("the provider was closed while the server was still starting"));
    stopStarting = undefined;
    closing = (async () => {
      const started = await pending?.catch(() => undefined);
      await started?.connection.close();
    })();
    return closing;
  };

  return {
    name: server,
    initialize,
    getTools() {
      if (!current) throw new McpServerError(server, "is not connected: the provider's initialize() must finish before getTools()");
      return current.tools;
    },
    close,
    get pid() {
      return lastPid;
    },
    mcpName: (toolName) => current?.mcpNames.get(toolName),
    get skipped() {
      return current?.skipped ?? [];
    },
  };
}

/** Connect, list every page of tools, and build the jianmu tools; on any failure the connection is closed again. */
async function start(options: ParsedMcpOptions, stop: AbortSignal, onSpawn: (pid: number) => void): Promise<Started> {
  const server = options.name;
  const limit = options.startupTimeoutMs ?? DEFAULT_STARTUP_MS;
  // One controller for the whole start, aborted by its time limit or by `stop`, released when it ends.
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new Error(`no answer within ${limit} ms (options.startupTimeoutMs)`)), limit);
  const onStop = () => controller.abort(stop.reason);
  stop.addEventListener("abort", onStop, { once: true });
  let connection: McpConnection | undefined;
  try {
    connection = await openConnection(server, options.transport, { signal: controller.signal, timeoutMs: limit, onSpawn });
    const listed = await listAllTools(connection.client, controller.signal, limit + 1000).catch((error: unknown) => {
      const cause: unknown = controller.signal.aborted ? controller.signal.reason : error;
      throw new McpServerError(server, `could not list its tools: ${describeCause(cause)}${stderrNote(connection!.stderrTail())}`, { cause });
    });
    return { connection, ...buildTools(options, listed, connection) };
  } catch (error) {
    await connection?.close().catch(() => undefined);
    throw error;
  } finally {
    clearTimeout(timer);
    stop.removeEventListener("abort", onStop);
  }
}

async function listAllTools(client: Client, signal: AbortSignal, timeout: number): Promise<McpToolDefinition[]> {
  const tools: McpToolDefinition[] = [];
  const seen = new Set<string>();
  let cursor: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const result = await client.listTools(cursor !== undefined ? { cursor } : undefined, { signal, timeout });
    tools.push(...result.tools);
    cursor = result.nextCursor;
    if (cursor === undefined) return tools;
    if (seen.has(cursor)) throw new Error(`the server repeated the page cursor ${JSON.stringify(cursor)}`);
    seen.add(cursor);
  }
  throw new Error(`the tool list did not end after ${MAX_PAGES} pages`);
}

function buildTools(options: ParsedMcpOptions, listed: McpToolDefinition[], connection: McpConnection) {
  const server = options.name;
  const offered = new Set(listed.map((tool) => tool.name));
  const filter = options.filter;
  if (Array.isArray(filter)) {
    const missing = filter.filter((name) => !offered.has(name));
    if (missing.length > 0) {
      throw new McpServerError(
        server,
        `does not offer the tool(s) named in options.filter: ${missing.join(", ")}. It offers: ${[...offered].join(", ") || "none"}`,
      );
    }
  }
  const keep = typeof filter === "function" ? filter : Array.isArray(filter) ? (name: string) => filter.includes(name) : () => true;

  const skipped: SkippedMcpTool[] = [];
  const usable = listed.filter((tool) => {
    if (!keep(tool.name)) {
      skipped.push({ mcpName: tool.name, reason: "left out by options.filter" });
      return false;
    }
    if (tool.execution?.taskSupport === "required") {
      skipped.push({ mcpName: tool.name, reason: "it can only run as an MCP task, which jianmu does not support" });
      return false;
    }
    return true;
  });

  const unavailable = (cause?: unknown) => {
    const lost = connection.lostReason();
    return lost === undefined ? undefined : new McpServerError(server, `is not available: ${lost}${stderrNote(connection.stderrTail())}`, { cause });
  };
  const call: McpCall = async (mcpName, args, signal) => {
    const down = unavailable();
    if (down) throw down;
    try {
      const result = await connection.client.callTool({ name: mcpName, arguments: args }, undefined, {
        signal,
        ...(options.timeoutMs !== undefined ? { timeout: options.timeoutMs } : {}),
      });
      // Parsed with the SDK's default CallToolResultSchema; its declared type also admits the legacy form.
      return result as CallToolResult;
    } catch (error) {
      // "Connection closed" says less than why it closed.
      throw (signal.aborted ? undefined : unavailable(error)) ?? error;
    }
  };

  const names = assignToolNames(
    usable.map((tool) => tool.name),
    options.prefix ?? "",
  );
  const tools = usable.map((definition, index) =>
    mcpTool(definition, {
      name: names[index]!.name,
      server,
      call,
      ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
      ...(options.retries !== undefined ? { retries: { retries: options.retries, ...(options.retryDelayMs !== undefined ? { retryDelayMs: options.retryDelayMs } : {}) } } : {}),
    }),
  );
  return { tools, mcpNames: new Map(names.map((n) => [n.name, n.mcpName])), skipped };
}
