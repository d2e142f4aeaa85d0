import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { ParsedMcpOptions } from "./options.js";
import { processGone } from "./process-exit.js";
import { JianmuError } from "../jianmu-error.js";

/** How much of the server's stderr is kept to explain a failure. */
const STDERR_TAIL_CHARS = 2000;
/** A polite DELETE of the HTTP session must not hold up shutting down. */
const TERMINATE_SESSION_MS = 2000;

const CLIENT_INFO = { name: "jianmu", version: "0.1.0" };

/** Something went wrong with an MCP server (not with one of its tools). Names the server. */
export class McpServerError extends JianmuError {
  static override readonly errorCode = "MCP_SERVER_ERROR";
  override name = "McpServerError";
  constructor(
    readonly server: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(`MCP server "${server}" ${message}`, options);
  }
}

/** The SDK's stdio transport forgets the child's pid as soon as it closes; keep it to check the child is gone. */
class PidKeepingStdioTransport extends StdioClientTransport {
  spawnedPid: number | undefined;
  onSpawn: ((pid: number) => void) | undefined;
  override async start(): Promise<void> {
    await super.start();
    this.spawnedPid = this.pid ?? undefined;
    if (this.spawnedPid !== undefined) this.onSpawn?.(this.spawnedPid);
  }
}

export interface McpConnection {
  readonly client: Client;
  /** The server process (stdio only). */
  readonly pid: number | undefined;
  /** Why the connection ended before `close` was called, if it did. */
  lostReason(): string | undefined;
  /** The end of what the server wrote to stderr (stdio with stderr "capture"). */
  stderrTail(): string;
  /** Disconnect; for stdio, make sure the process has ended (killing it if it lingers). */
  close(): Promise<void>;
}

type Transports = ParsedMcpOptions["transport"];

/**
 * Connect to the server and run the MCP handshake. On failure everything acquired is released
 * again and the error says what the server printed to stderr, when that helps.
 */
export async function openConnection(
  server: string,
  transport: Transports,
  limits: { signal: AbortSignal; timeoutMs: number; onSpawn?: (pid: number) => void },
): Promise<McpConnection> {
  let tail = "";
  let lost: string | undefined;
  let closing = false;
  let stdio: PidKeepingStdioTransport | undefined;
  let http: StreamableHTTPClientTransport | undefined;
  let sdkTransport: Transport;

  if (transport.type === "stdio") {
    const mode = transport.stderr ?? "capture";
    stdio = new PidKeepingStdioTransport({
      command: transport.command,
      ...(transport.args ? { args: transport.args } : {}),
      // The SDK adds its safe defaults (HOME, PATH, ...) and nothing else from this process.
      env: transport.env ?? {},
      ...(transport.cwd ? { cwd: transport.cwd } : {}),
      stderr: mode === "capture" ? "pipe" : mode,
    });
    stdio.onSpawn = limits.onSpawn;
    // Reading it also keeps a chatty server from blocking on a full pipe.
    stdio.stderr?.on("data", (chunk: Buffer | string) => {
      tail = (tail + chunk.toString()).slice(-STDERR_TAIL_CHARS);
    });
    sdkTransport = stdio;
  } else {
    http = new StreamableHTTPClientTransport(new URL(transport.url), transport.headers ? { requestInit: { headers: transport.headers } } : {});
    sdkTransport = http;
  }

  const client = new Client(CLIENT_INFO, { capabilities: {} });
  // Transport errors alone are not fatal (a stray non-JSON line on stdout, a refused SSE stream):
  // only a closed connection makes the server unavailable. The last error helps explain it.
  let lastError: string | undefined;
  client.onerror = (error) => {
    lastError = error.message;
  };
  client.onclose = () => {
    if (closing) return;
    lost = `the connection closed (the server exited or dropped it)${lastError ? `; the last transport error was: ${lastError}` : ""}`;
  };

  const close = async () => {
    closing = true;
    if (http) {
      // Ask the server to drop the session; 405 (not supported) and network errors are fine.
      await withDeadline(http.terminateSession().catch(() => undefined), TERMINATE_SESSION_MS);
    }
    await client.close().catch(() => undefined);
    if (stdio?.spawnedPid !== undefined) await processGone(stdio.spawnedPid);
  };

  try {
    // The SDK's own request timeout sits past ours, so the caller's deadline is the one reported.
    await client.connect(sdkTransport, { signal: limits.signal, timeout: limits.timeoutMs + 1000 });
  } catch (error) {
    await close();
    // The pipe may still hold the last lines the server wrote before it died.
    await new Promise((resolve) => setImmediate(resolve));
    const cause: unknown = limits.signal.aborted ? limits.signal.reason : error;
    throw new McpServerError(server, `could not be started: ${describeCause(cause)}${stderrNote(tail)}`, { cause });
  }

  return {
    client,
    get pid() {
      return stdio?.spawnedPid;
    },
    lostReason: () => lost,
    stderrTail: () => tail,
    close,
  };
}

export function describeCause(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export function stderrNote(tail: string): string {
  const trimmed = tail.trim();
  return trimmed === "" ? "" : `. Its stderr ended with: ${trimmed.slice(-500)}`;
}

async function withDeadline(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  try {
    await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}
