import { describeTools, perToolList } from "../tools/toolset.js";
import type { ToolInfo } from "../tools/tool.js";
import { system, type Message } from "./messages.js";

/** Everything a context builder may use to assemble the prompt of one model call. */
export interface ContextInput {
  agent: string;
  iteration: number;
  /** The conversation so far (the agent's `messages` field). */
  messages: readonly Message[];
  /** The agent's fields, read-only. */
  state: Readonly<Record<string, unknown>>;
  tools: readonly ToolInfo[];
  /** `config.systemPrompt`, when set: replaces the default persona. */
  systemPrompt?: string;
}

/** Builds the exact message list sent to the model. Given explicitly, it replaces the default preset entirely. */
export type ContextBuilder = (input: ContextInput) => Message[] | Promise<Message[]>;

export const DEFAULT_PERSONA =
  "You are a careful, capable assistant. Work out what the user needs, use tools whenever they give a more reliable answer than guessing, and reply concisely.";

/**
 * The ReAct protocol in plain words. Calls go through the API's function calling, so the model
 * is told not to write calls as text, and how the loop ends.
 */
export const REACT_PROTOCOL = [
  "You work in a loop: think about the task, call tools when you need information or an action, read their results, and repeat until you can answer.",
  "Tool calls are handled by the system through function calling: do not write tool calls as text or JSON in your reply.",
  "You may call several independent tools at once. If a tool reports an error, read it, fix the call or try another approach.",
  "When you have the answer, reply with it in plain text and call no tool: that ends the task.",
].join("\n");

/**
 * An agent's tool list is one unchanging array per run (and for static tools, the same array for
 * every run of the machine), so its prompt per persona is written once and shared: not a new
 * string of a couple of kilobytes per round, held by every run in flight.
 */
const promptsOf = perToolList(() => new Map<string, string>());

/** Enough for the personas a prompt-per-round `prepareRound` may cycle through; past it, prompts are built each time. */
const MAX_PERSONAS_PER_TOOL_LIST = 16;

function systemPromptFor(tools: readonly ToolInfo[], persona: string): string {
  const prompts = promptsOf(tools);
  let prompt = prompts.get(persona);
  if (prompt === undefined) {
    prompt = [persona, REACT_PROTOCOL, `Available tools:\n${describeTools(tools)}`].join("\n\n");
    if (prompts.size < MAX_PERSONAS_PER_TOOL_LIST) prompts.set(persona, prompt);
  }
  return prompt;
}

/** The default preset: persona (or `systemPrompt`) + protocol + tool descriptions, then the history. */
export const defaultContextBuilder: ContextBuilder = (input) => [system(systemPromptFor(input.tools, input.systemPrompt ?? DEFAULT_PERSONA)), ...input.messages];
