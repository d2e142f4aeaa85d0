import type { CallRecord, GuardCall, GuardContext } from "../../actors/guard.js";
import type { ToolInfo } from "../../tools/tool.js";

/** Shared builders for guard unit tests: a tool description, a call, and the context a guard sees. */

export const toolInfo = (name: string, effectTags: string[] = []): ToolInfo => ({
  name,
  description: name,
  inputSchema: { type: "object" },
  parallelSafe: false,
  effectTags,
});

export const guardCall = (name: string, id = `id_${name}`, tool?: ToolInfo): GuardCall => ({ id, name, arguments: "{}", args: {}, tool });

export const guardContext = (
  batch: GuardCall[],
  options: { history?: CallRecord[]; now?: number; iteration?: number; state?: Record<string, unknown> } = {},
): GuardContext => ({
  state: options.state ?? {},
  runId: "run",
  iteration: options.iteration ?? 0,
  history: options.history ?? [],
  batch,
  now: options.now ?? 0,
  signal: new AbortController().signal,
});
