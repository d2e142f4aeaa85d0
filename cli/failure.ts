import { CONFIG_FILE } from "../machines/contract/config.js";
import type { AgentOutput } from "../machines/contract/context.js";
import type { TerminationReason } from "../machines/contract/events.js";

/** The limits a run was given, for failure lines that name the limit and how to raise it. */
export interface RunLimits {
  maxIterations: number;
  maxBudgetTokens?: number;
}

const FIXES: Record<TerminationReason, (output: AgentOutput, limits: RunLimits) => string> = {
  maxIterations: (_output, limits) =>
    `no answer within ${limits.maxIterations} iteration${limits.maxIterations === 1 ? "" : "s"} (the limit); raise it with --max-iterations <n> or ${CONFIG_FILE.pathOf("maxIterations")} in jianmu.yaml`,
  tokenBudget: (output, limits) =>
    `the run spent ${output.usage.totalTokens} tokens, reaching its budget of ${limits.maxBudgetTokens ?? "?"}; raise it with --budget <tokens> or ${CONFIG_FILE.pathOf("maxBudgetTokens")} in jianmu.yaml`,
  modelError: (output) => `${output.termination?.error?.message ?? "the model call failed"}; check --base-url, --model and OPENAI_API_KEY`,
  cancelled: (output) => `${output.termination?.detail ?? "cancelled"}; nothing more was run`,
  approvalTimeout: (output) => `${output.termination?.detail ?? output.termination?.error?.message ?? "no approval came in time"}; answer the prompt sooner, or pass --yes`,
  toolProviderError: (output) => `${output.termination?.error?.message ?? "a tool provider failed"}; check the tool server's command and settings`,
  invalidOutput: (output) =>
    `${output.termination?.error?.message ?? "the final output did not fit the output schema"}; raise config.outputRetries, or make the schema or the prompt clearer`,
  handoffFailed: (output) => `${output.termination?.error?.message ?? "the agent the run was handed to failed"}; see that agent's termination above`,
  internalError: (output) => `${output.termination?.error?.message ?? "an internal error"}; please report it with the command you ran`,
  costBudget: (output) =>
    `${output.termination?.error?.message ?? `the run cost ${output.usage.cost ?? "an unknown amount"}, reaching its budget`}; raise ${CONFIG_FILE.pathOf("maxBudgetCost")} in jianmu.yaml, or price the model in ${CONFIG_FILE.pathOf("pricing")}`,
  guardrailTripped: (output) =>
    `guardrail ${output.termination?.guardrail ?? "?"} tripped: ${output.termination?.detail ?? output.termination?.error?.message ?? "no reason given"}`,
  deadline: () => `the run reached its deadline; raise ${CONFIG_FILE.pathOf("maxDurationMs")} in jianmu.yaml`,
};

/** "Agent failed (tokenBudget): the run spent ..., reaching its budget of ...; raise it with ..." */
export function failureLine(output: AgentOutput, limits: RunLimits): string {
  const reason = output.termination?.reason ?? "internalError";
  return `Agent failed (${reason}): ${FIXES[reason](output, limits)}`;
}
