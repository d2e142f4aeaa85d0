import { z } from "zod";
import { defineTool, ToolDefinitionError, type Tool } from "../../tools/tool.js";
import { withAgentSpec } from "../chart/agent-tool-spec.js";
import type { ReactMachine } from "../react-machine.js";

export interface HandoffOptions {
  /** The tool name the model calls (default `transfer_to_<machine name>`). */
  name?: string;
  /** When to hand off, for the model (default: names the agent that takes over). */
  description?: string;
}

/** Letters, digits, '_' and '-', at most 64: what the model API accepts as a function name. */
function toolNameFor(agent: string): string {
  return `transfer_to_${agent}`.replace(/[^A-Za-z0-9_-]/g, "_").slice(0, 64);
}

/**
 * A tool that ends the calling agent's own reasoning and continues the conversation in another
 * agent. The calling agent moves to its `HandingOff` state, runs the other agent as a nested actor
 * with the conversation so far, emits `agent.handoff`, and finishes with the other agent's answer
 * (the other agent's messages join its conversation). Approvals inside the other agent bubble up as
 * for `agentTool`. Only the first handoff of a model reply is taken.
 */
export function handoff(machine: ReactMachine, options: HandoffOptions = {}): Tool {
  if (!options || typeof options !== "object") throw new ToolDefinitionError("handoff", "options", "must be an object { name?, description? }");
  if (!machine || typeof machine !== "object" || typeof machine.provide !== "function" || typeof machine.id !== "string") {
    throw new ToolDefinitionError(options.name ?? "handoff", "machine", "must be an agent machine made by createReactMachine({ ... })");
  }
  const name = options.name ?? toolNameFor(machine.id);
  const tool = defineTool({
    name,
    description: options.description ?? `Hand the conversation over to the ${machine.id} agent, which answers the user from here on.`,
    parameters: z.object({}),
    execute: () => {
      throw new Error(`${name} is a handoff: it runs as a state of the agent whose createReactMachine({ tools }) holds it, not on its own`);
    },
  });
  return withAgentSpec(tool, {
    kind: "handoff",
    machine,
    // The conversation is added by the calling agent when it hands off.
    input: () => ({}),
    result: (output) => output.finalAnswer ?? "",
  });
}
