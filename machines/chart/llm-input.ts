import type { LLMInput } from "../../actors/llm-step.js";
import type { Message } from "../../actors/messages.js";
import type { Usage } from "../../actors/model-client.js";
import { resilienceWithoutKeys } from "../../actors/resilience-config.js";
import type { ReActConfig } from "../contract/config.js";
import type { AgentContext } from "../contract/context.js";
import type { RoundRequest } from "./round-request.js";
import { spendInput } from "./spend.js";

/** Keys of the first-round-only tool choice inside `extraParams`. */
const TOOL_CHOICE_KEYS = new Set(["toolChoice", "tool_choice"]);

/** What the LLM step's input needs from the machine besides the config. */
export interface LlmInputParts {
  name: string;
  config: ReActConfig;
  /** An explicit context builder owns the whole prompt, persona included. */
  hasContextBuilder: boolean;
  round: RoundRequest;
  read<T>(context: AgentContext, field: string): T;
  view(context: AgentContext): Record<string, unknown>;
}

/** The LLM step's input, built per round from what is fixed per machine and what the round changes. */
export interface LlmInputs {
  /** The configured system prompt, when the machine's own (not a context builder's). */
  readonly systemPrompt: string | undefined;
  /** The per-call timeout, in ms. */
  readonly timeoutMs: number | undefined;
  input(context: AgentContext): LLMInput;
}

export function llmInputs({ name, config, hasContextBuilder, round, read, view }: LlmInputParts): LlmInputs {
  // What the LLM step gets besides the conversation is fixed per machine: built once (and frozen,
  // since every run shares it), not on every round.
  const sampling: LLMInput["sampling"] = {};
  if (config.model !== undefined) sampling.model = config.model;
  if (config.temperature !== undefined) sampling.temperature = config.temperature;
  if (config.maxTokens !== undefined) sampling.maxTokens = config.maxTokens;
  if (config.topP !== undefined) sampling.topP = config.topP;
  if (config.topK !== undefined) sampling.topK = config.topK;
  if (config.timeout !== undefined) sampling.timeoutMs = config.timeout * 1000;
  const fixedInput = Object.freeze({
    agent: name,
    ...(config.systemPrompt !== undefined && !hasContextBuilder ? { systemPrompt: config.systemPrompt } : {}),
    sampling: Object.freeze(sampling),
    // Without keys: this input is persisted in every snapshot. The keys reach the LLM actor itself.
    ...(config.resilience !== undefined ? { resilience: resilienceWithoutKeys(config.resilience) } : {}),
  });
  const firstRoundParams = Object.freeze({ ...config.extraParams });
  const laterRoundParams = Object.freeze(Object.fromEntries(Object.entries(config.extraParams).filter(([key]) => !TOOL_CHOICE_KEYS.has(key))));

  return {
    systemPrompt: fixedInput.systemPrompt,
    timeoutMs: sampling.timeoutMs,
    input(context) {
      const rounds = read<number>(context, "rounds");
      const firstRound = rounds === 0;
      const input: LLMInput = {
        ...fixedInput,
        runId: context.loop.runId,
        iteration: context.loop.iteration,
        rounds,
        messages: read<Message[]>(context, "messages"),
        state: view(context),
        tools: context.loop.tools,
        extraParams: firstRound ? firstRoundParams : laterRoundParams,
      };
      if (firstRound && config.toolChoice !== undefined) input.toolChoice = config.toolChoice;
      const spend = spendInput(config, context, read<Usage>(context, "usage"));
      if (spend) input.spend = spend;
      if (context.loop.spend?.forkPoint) input.forkPoint = true;
      if (context.loop.modelRoute !== undefined) input.route = context.loop.modelRoute;
      return round.apply(input, context.loop.round);
    },
  };
}
