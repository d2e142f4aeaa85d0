import type { Tool } from "../../tools/tool.js";
import type { AgentInput, AgentOutput } from "../contract/context.js";

/**
 * What makes a tool an agent: the machine to run as a nested actor and how its input and output
 * are made. Kept apart from agent-tool.ts so the statechart can read it without importing the
 * builders (which know the machine type).
 */
export interface AgentToolSpec {
  /** "agent": the nested agent's answer is the call's result; "handoff": the nested agent takes over the run. */
  readonly kind: "agent" | "handoff";
  /** An agent machine (createReactMachine); typed loosely here to keep this file a leaf. */
  readonly machine: { readonly id: string; readonly config: object };
  /** The nested agent's input from the call's validated arguments (a handoff adds the conversation). */
  input(args: Record<string, unknown>): AgentInput;
  /** The call's result from the nested agent's output (agent tools only). */
  result(output: AgentOutput): string;
}

const SPEC = Symbol.for("jianmu.agentTool");

export type AgentTool = Tool & { readonly [SPEC]: AgentToolSpec };

export function withAgentSpec(tool: Tool, spec: AgentToolSpec): AgentTool {
  return Object.freeze({ ...tool, [SPEC]: spec });
}

export function agentSpecOf(tool: Tool): AgentToolSpec | undefined {
  return (tool as Partial<AgentTool>)[SPEC];
}

/** The agent tools and handoffs among a machine's tools, by tool name. */
export function agentToolsOf(tools: readonly Tool[]): Map<string, { tool: Tool; spec: AgentToolSpec }> {
  const found = new Map<string, { tool: Tool; spec: AgentToolSpec }>();
  for (const tool of tools) {
    const spec = tool ? agentSpecOf(tool) : undefined;
    if (spec) found.set(tool.name, { tool, spec });
  }
  return found;
}
