import { z } from "zod";
import { human } from "../../actors/messages.js";
import { defineTool, ToolDefinitionError, type Tool } from "../../tools/tool.js";
import { withAgentSpec, type AgentTool } from "../chart/agent-tool-spec.js";
import type { AgentInput, AgentOutput } from "../contract/context.js";
import type { ReactMachine } from "../react-machine.js";

/** The arguments an agent tool takes unless told otherwise: one request in plain words. */
const DefaultInput = z.object({ input: z.string().min(1).describe("What to ask the agent, in plain words, with everything it needs to know") });

export interface AgentToolOptions<P extends z.ZodObject = typeof DefaultInput> {
  /** The tool name the model calls (letters, digits, '_' or '-'). */
  name: string;
  /** What the agent does, for the model deciding when to call it. */
  description: string;
  /** The arguments the model gives (default: `{ input: string }`). */
  input?: P;
  /**
   * What the nested agent starts with, from the validated arguments: a user message, or a whole
   * `AgentInput`. Default: the `input` argument, or the arguments as JSON for a custom schema.
   */
  toInput?: (args: z.output<P>) => string | AgentInput;
  /** The call's result from the nested agent's output. Default: its structured output when it has one, else its final answer. */
  toResult?: (output: AgentOutput) => unknown;
}

function checkMachine(machine: unknown, tool: string): ReactMachine {
  const candidate = machine as Partial<ReactMachine> | null;
  if (!candidate || typeof candidate !== "object" || typeof candidate.provide !== "function" || typeof candidate.id !== "string") {
    throw new ToolDefinitionError(tool, "machine", "must be an agent machine made by createReactMachine({ ... })");
  }
  return machine as ReactMachine;
}

/** Structured output, when the nested agent has an `output` schema (`AgentOutput.output`), else its final answer. */
function defaultResult(output: AgentOutput): unknown {
  const structured = output.output;
  return structured !== undefined && structured !== null ? structured : (output.finalAnswer ?? "");
}

export function renderResult(value: unknown): string {
  if (typeof value === "string") return value;
  try {
    return JSON.stringify(value) ?? "";
  } catch {
    return String(value);
  }
}

/**
 * Make an agent machine a tool of another agent. A call runs the agent as a nested actor of the
 * calling agent (persisted inside its snapshot, shown in the inspector), its telemetry is re-emitted
 * by the caller with an `agentPath`, its token usage counts toward the caller's budget, its calls
 * that need approval wait at the top, and its final answer (or structured output) is the result. A
 * nested agent that fails gives the caller an error observation.
 *
 * Give it to `createReactMachine({ tools: [...] })` of the calling agent (not through a tool
 * provider: the caller's chart must know it when it is built).
 */
export function agentTool<P extends z.ZodObject = typeof DefaultInput>(machine: ReactMachine, options: AgentToolOptions<P>): Tool {
  if (!options || typeof options !== "object") {
    throw new ToolDefinitionError("agentTool", "options", "must be an object { name, description, input?, toInput?, toResult? }");
  }
  const name = String(options.name);
  const agent = checkMachine(machine, name);
  for (const field of ["toInput", "toResult"] as const) {
    if (options[field] !== undefined && typeof options[field] !== "function") throw new ToolDefinitionError(name, field, "must be a function");
  }
  const parameters = (options.input ?? DefaultInput) as P;
  const custom = options.input !== undefined;
  const tool = defineTool({
    name: options.name,
    description: options.description,
    parameters,
    execute: () => {
      throw new Error(`${name} is an agent tool: it runs as a nested agent of the agent whose createReactMachine({ tools }) holds it, not on its own`);
    },
  });
  return withAgentSpec(tool, {
    kind: "agent",
    machine: agent,
    input: (args) => {
      const made = options.toInput ? options.toInput(args as z.output<P>) : custom ? JSON.stringify(args) : String(args["input"]);
      return typeof made === "string" ? { messages: [human(made)] } : made;
    },
    result: (output) => renderResult((options.toResult ?? defaultResult)(output)),
  }) satisfies AgentTool;
}
