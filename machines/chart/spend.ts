import type { LLMOutput } from "../../actors/llm-step.js";
import { addUsage, type UnreportedSpend, type Usage } from "../../actors/model-client.js";
import { pricedUsage, type Pricing } from "../../actors/pricing.js";
import type { SpendInput } from "../../actors/spend.js";
import type { ReActConfig } from "../contract/config.js";
import type { AgentContext, AgentInput } from "../contract/context.js";
import type { Grant, SpendState } from "../contract/limits.js";
import type { StateAccess } from "../contract/state-access.js";

/**
 * The pure bookkeeping behind budgets that hold: the run's budgets (its config's, narrowed by a
 * nested agent's grant), what it has spent (what servers reported, plus what attempts that failed
 * without a word may have cost), what the next call may spend, and what a nested agent may.
 */

const smaller = (a: number | undefined, b: number | undefined) => (a === undefined ? b : b === undefined ? a : Math.min(a, b));

/** The run's budgets: `config.maxBudgetTokens` / `maxBudgetCost`, or the grant of the agent that started it when smaller. */
export function budgetsOf(config: ReActConfig, context: AgentContext): Grant {
  const grant = context.loop.limits;
  const tokens = smaller(config.maxBudgetTokens, grant?.tokens);
  const cost = smaller(config.maxBudgetCost, grant?.cost);
  return { ...(tokens !== undefined ? { tokens } : {}), ...(cost !== undefined ? { cost } : {}) };
}

/**
 * What the run has spent. `cost` is `null` when it is not known: a call's model had no price, or
 * tokens came without a price at all (a nested agent without pricing): a cost budget then ends the run.
 */
export function spentOf(context: AgentContext, usage: Usage): { tokens: number; cost: number | null } {
  const spend = context.loop.spend;
  const tokens = usage.totalTokens + (spend?.unreportedTokens ?? 0);
  const reported = usage.cost === undefined ? (usage.totalTokens === 0 ? 0 : null) : usage.cost;
  return { tokens, cost: reported === null ? null : reported + (spend?.unreportedCost ?? 0) };
}

/** The token budget is used up: no call can fit (CheckAbort ends the run: tokenBudget). */
export function tokenBudgetSpent(config: ReActConfig, context: AgentContext, usage: Usage): boolean {
  const budget = budgetsOf(config, context).tokens;
  return budget !== undefined && spentOf(context, usage).tokens >= budget;
}

/** The cost budget is used up, or what was spent is not known (CheckAbort ends the run: costBudget). */
export function costBudgetSpent(config: ReActConfig, context: AgentContext, usage: Usage): boolean {
  const budget = budgetsOf(config, context).cost;
  if (budget === undefined) return false;
  const cost = spentOf(context, usage).cost;
  return cost === null || cost >= budget;
}

/** Which budget is used up (the token one first), if one is: the run's termination reason at CheckAbort. */
export function spentBudget(config: ReActConfig, context: AgentContext, usage: Usage): "tokenBudget" | "costBudget" | undefined {
  if (tokenBudgetSpent(config, context, usage)) return "tokenBudget";
  return costBudgetSpent(config, context, usage) ? "costBudget" : undefined;
}

/** What is left of each budget (never below zero); undefined without budgets. */
export function leftOf(config: ReActConfig, context: AgentContext, usage: Usage): Grant | undefined {
  const budgets = budgetsOf(config, context);
  if (budgets.tokens === undefined && budgets.cost === undefined) return undefined;
  const spent = spentOf(context, usage);
  const left: Grant = {};
  if (budgets.tokens !== undefined) left.tokens = Math.max(0, budgets.tokens - spent.tokens);
  if (budgets.cost !== undefined) left.cost = spent.cost === null ? 0 : Math.max(0, budgets.cost - spent.cost);
  return left;
}

/** What the next model call (or summary) may spend, for the LLM step's input; undefined without budgets. */
export function spendInput(config: ReActConfig, context: AgentContext, usage: Usage): SpendInput | undefined {
  const left = leftOf(config, context, usage);
  if (!left) return undefined;
  const input: SpendInput = { ...left };
  if (left.cost !== undefined && config.pricing) input.pricing = config.pricing;
  const scale = context.loop.spend?.promptScale;
  if (scale !== undefined && scale > 1) input.promptScale = scale;
  return input;
}

/**
 * After a model call: add what its failed attempts may have cost (`unreported`), and when the server
 * counted more prompt tokens than estimated, scale later estimates up by as much.
 */
export function noteSpend(spend: SpendState | undefined, turn: Pick<LLMOutput, "usage" | "usageMissing" | "promptEstimate" | "unreported">): SpendState | undefined {
  const unreported = turn.unreported;
  const estimate = turn.promptEstimate;
  const short = estimate !== undefined && estimate > 0 && !turn.usageMissing && turn.usage.promptTokens > estimate;
  if (!unreported && !short && spend?.forkPoint === undefined) return spend;
  const next: SpendState = { ...addUnreported(pastForkPoint(spend), unreported) };
  if (short) next.promptScale = (spend?.promptScale ?? 1) * (turn.usage.promptTokens / estimate);
  return next;
}

/**
 * A step answered (a reply, a summary, a batch of tool calls): from here on a fork's steps are its own,
 * and one cut off by a restore counts like any run's (`SpendState.forkPoint`).
 */
export function pastForkPoint(spend: SpendState | undefined): SpendState | undefined {
  if (spend?.forkPoint === undefined) return spend;
  const { forkPoint: _forkPoint, ...kept } = spend;
  return kept;
}

/**
 * Spending no server reported that counts all the same: attempts that may have been billed (of a
 * reply, a summary, a call that failed for good) and what a nested agent counted so (its
 * `loop.terminated` says).
 */
export function addUnreported(spend: SpendState | undefined, unreported: UnreportedSpend | undefined): SpendState | undefined {
  if (!unreported || (unreported.tokens === 0 && unreported.cost === 0)) return spend;
  return { ...spend, unreportedTokens: (spend?.unreportedTokens ?? 0) + unreported.tokens, unreportedCost: (spend?.unreportedCost ?? 0) + unreported.cost };
}

/** What the run counted beyond its usage (for `loop.terminated`, so the agent that started it counts it too). */
export function unreportedSpend(spend: SpendState | undefined): UnreportedSpend | undefined {
  const tokens = spend?.unreportedTokens ?? 0;
  const cost = spend?.unreportedCost ?? 0;
  return tokens === 0 && cost === 0 ? undefined : { tokens, cost };
}

/** A nested agent's input, limited to what this run has left (the smaller, when the input sets limits of its own). */
export function withGrant(input: AgentInput, left: Grant | undefined): AgentInput {
  if (!left) return input;
  const tokens = smaller(left.tokens, input.limits?.tokens);
  const cost = smaller(left.cost, input.limits?.cost);
  return { ...input, limits: { ...(tokens !== undefined ? { tokens } : {}), ...(cost !== undefined ? { cost } : {}) } };
}

/** A nested agent's reply usage as this run counts it: priced here when it came without a cost. */
export function nestedUsage(usage: Usage, pricing: Pricing | undefined, model: string | undefined): Usage {
  return usage.cost !== undefined || usage.totalTokens === 0 ? usage : pricedUsage(usage, pricing, model);
}

/** Usage spent beside the agent's own replies (a nested agent's replies, a guardrail's judge) joins the run's usage, and so its budgets. */
export function addSpentUsage(context: AgentContext, access: StateAccess, usage: Usage): AgentContext {
  return { ...context, state: access.write(context.state, { usage: addUsage(access.read<Usage>(context.state, "usage"), usage) }) };
}
