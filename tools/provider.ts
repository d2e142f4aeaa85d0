import type { Tool } from "./tool.js";
import { JianmuError } from "./jianmu-error.js";

/**
 * A source of tools that lives longer than one call: an MCP server, a plugin host, a registry.
 * The agent initializes its providers when it starts (before the first model call) and
 * closes them when it reaches a final state or is stopped.
 */
export interface ToolProvider<TContext = unknown> {
  /** Names the provider in errors and telemetry (e.g. the MCP server). */
  readonly name: string;
  /**
   * Connect, spawn, authenticate. Called once before `getTools`. `signal` aborts when the agent
   * stops before it finished (a cancel while tools start): give up then. The agent does not wait for
   * it anyway: it calls `close()` at once and moves on.
   */
  initialize(context: TContext, signal?: AbortSignal): Promise<void> | void;
  /** The tools currently offered. */
  getTools(context: TContext): Promise<readonly Tool[]> | readonly Tool[];
  /** Release everything `initialize` acquired. Must be safe to call more than once. */
  close(): Promise<void> | void;
}

/** A provider failed to start or to list its tools. */
export class ToolProviderError extends JianmuError {
  static override readonly errorCode = "TOOL_PROVIDER_ERROR";
  override name = "ToolProviderError";
  constructor(
    readonly provider: string,
    readonly phase: "initialize" | "getTools" | "close",
    cause: unknown,
  ) {
    super(`tool provider "${provider}" failed during ${phase}: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
}
