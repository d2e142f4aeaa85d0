import { DEFAULT_PERSONA, REACT_PROTOCOL } from "../../actors/context-builder.js";
import type { LLMInput } from "../../actors/llm-step.js";
import { tokensOf } from "../../actors/token-count.js";
import type { ToolInfo } from "../../tools/tool.js";
import type { OutputPlan } from "./output.js";
import type { RoundPlan } from "../contract/round-plan.js";

/**
 * What a round's plan (`prepareRound`) and a structured output change in the LLM step's input.
 * Pure; the arrays it returns are cached per tool list, because the LLM step caches tool schemas by
 * array identity.
 */
export class RoundRequest {
  private readonly offeredCache = new WeakMap<readonly ToolInfo[], Map<string, ToolInfo[]>>();
  private readonly overheadCache = new WeakMap<readonly ToolInfo[], Map<string, number>>();

  constructor(private readonly output: OutputPlan | undefined) {}

  /** The tools the model is offered: the plan's subset (all when it names none), plus the final-result tool. */
  offered(tools: ToolInfo[], plan: RoundPlan | undefined): ToolInfo[] {
    const extra = this.output?.tool;
    if (plan?.tools === undefined && !extra) return tools;
    const key = plan?.tools?.join("\n") ?? "*";
    let byKey = this.offeredCache.get(tools);
    if (!byKey) this.offeredCache.set(tools, (byKey = new Map()));
    let list = byKey.get(key);
    if (!list) {
      const names = plan?.tools ? new Set(plan.tools) : undefined;
      list = [...(names ? tools.filter((t) => names.has(t.name)) : tools), ...(extra ? [extra] : [])];
      byKey.set(key, list);
    }
    return list;
  }

  /** Apply the plan and the output strategy to the input the machine built from its config. */
  apply(input: LLMInput, plan: RoundPlan | undefined): LLMInput {
    if (!plan && !this.output) return input;
    const next: LLMInput = { ...input, tools: this.offered(input.tools, plan) };
    if (this.output?.responseFormat || plan?.extraParams) {
      next.extraParams = { ...input.extraParams, ...(this.output?.responseFormat ? { response_format: this.output.responseFormat } : {}), ...plan?.extraParams };
    }
    if (plan?.model !== undefined) next.sampling = { ...input.sampling, model: plan.model };
    if (plan?.toolChoice !== undefined) next.toolChoice = plan.toolChoice;
    if (plan?.systemPrompt !== undefined) next.systemPrompt = plan.systemPrompt;
    if (this.output?.tool) next.streamArguments = this.output.tool.name;
    return next;
  }

  /**
   * Tokens a request adds besides the messages: the system prompt (the default preset's when none is
   * set) and the offered tools' schemas. An estimate; a custom context builder may add more.
   */
  overhead(tools: ToolInfo[], systemPrompt: string | undefined): number {
    const key = systemPrompt ?? "";
    let byKey = this.overheadCache.get(tools);
    if (!byKey) this.overheadCache.set(tools, (byKey = new Map()));
    let tokens = byKey.get(key);
    if (tokens === undefined) {
      const prompt = systemPrompt ?? `${DEFAULT_PERSONA}\n\n${REACT_PROTOCOL}`;
      tokens = tokensOf(prompt) + tokensOf(JSON.stringify(tools.map((t) => ({ name: t.name, description: t.description, parameters: t.inputSchema }))));
      byKey.set(key, tokens);
    }
    return tokens;
  }
}
