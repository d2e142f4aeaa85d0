import type { GuardrailInput, GuardrailMode, GuardrailOutcome, GuardrailStage, GuardrailSubject } from "../../actors/guardrail.js";
import type { GuardrailMoney, GuardrailSpend } from "../../actors/guardrail-spend.js";
import type { Usage } from "../../actors/model-client.js";
import { human, type Message } from "../../actors/messages.js";
import { toErrorInfo } from "../../actors/errors.js";
import { textOf } from "../../actors/content-parts.js";
import type { ReActConfig } from "../contract/config.js";
import type { AgentContext } from "../contract/context.js";
import type { StateAccess } from "../contract/state-access.js";
import type { Termination } from "../contract/termination.js";
import type { OutputPlan } from "./output.js";
import { addSpentUsage, addUnreported, spendInput } from "./spend.js";

/**
 * The pure context updates behind the guardrail states (guardrail-piece.ts): what a guardrail
 * checks, and what its verdict does to the run.
 */

/** The text of the conversation's last user message (its text parts, with content parts): what input guardrails check. */
function lastUserText(messages: readonly Message[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i]!;
    if (message.role === "user") return textOf(message.content);
  }
  return "";
}

/** What a guardrail of `stage` checks now: the run's input, or its final answer and typed output. */
export function guardrailSubject(context: AgentContext, access: StateAccess, stage: GuardrailStage, plan: OutputPlan | undefined): GuardrailSubject {
  const messages = access.read<Message[]>(context.state, "messages");
  if (stage === "input") return { stage, text: lastUserText(messages), messages };
  const text = access.read<string | null>(context.state, "finalAnswer") ?? "";
  const subject: GuardrailSubject = { stage, text, messages };
  if (plan && context.loop.output?.status === "valid") subject.value = plan.value(context.loop.output.raw);
  return subject;
}

/** The guardrail step's input (`skip`: nothing to check, as for the parallel guardrails once they answered). */
export function guardrailInput(context: AgentContext, subject: GuardrailSubject, state: Record<string, unknown>, money: GuardrailMoney, skip = false): GuardrailInput {
  const priced = money.spend !== undefined || money.pricing !== undefined;
  return { subject, runId: context.loop.runId, iteration: context.loop.iteration, state, ...(priced ? { money } : {}), ...(skip ? { skip } : {}) };
}

/**
 * What a guardrail's budgeted model calls may spend and how they are priced: what the run has left
 * (with budgets), `config.pricing`; `besideModelCall` for parallel input guardrails, whose calls the
 * round's model call leaves nothing to (it may spend all that is left).
 */
export function guardrailMoney(config: ReActConfig, context: AgentContext, usage: Usage, besideModelCall = false): GuardrailMoney {
  const spend = spendInput(config, context, usage);
  return { ...(spend ? { spend } : {}), ...(config.pricing ? { pricing: config.pricing } : {}), ...(spend && besideModelCall ? { besideModelCall } : {}) };
}

/** The guardrails' budgeted calls join the run's usage (and what it counts beyond it), whatever the verdict. */
export function applyGuardrailSpend(context: AgentContext, access: StateAccess, spent: GuardrailSpend | undefined): AgentContext {
  if (!spent) return context;
  const counted = addSpentUsage(context, access, spent.usage);
  const spend = addUnreported(context.loop.spend, spent.unreported);
  return spend ? { ...counted, loop: { ...counted.loop, spend } } : counted;
}

/** Input guardrails of `mode` have had their say in this run (passed or sent feedback): they do not run again. */
export function markInputGuarded(context: AgentContext, mode: GuardrailMode): AgentContext {
  return { ...context, loop: { ...context.loop, inputGuarded: { ...context.loop.inputGuarded, [mode]: true } } };
}

/** Whether the input guardrails of `mode` still have to run in this run. */
export function inputUnguarded(context: AgentContext, mode: GuardrailMode): boolean {
  return context.loop.inputGuarded?.[mode] !== true;
}

/** A trip as the outcome it was; an actor that crashed is a trip too, named after the step. */
export function tripOf(event: { output?: unknown; error?: unknown }): { guardrail: string; reason: string } {
  const outcome = event.output as GuardrailOutcome | undefined;
  if (outcome?.verdict === "trip") return { guardrail: outcome.guardrail, reason: outcome.reason };
  return { guardrail: "(guardrails)", reason: `the guardrail step failed: ${toErrorInfo(event.error).message}` };
}

/** The run fails: the guardrail's name and reason are kept in the termination. */
export function guardrailTermination(context: AgentContext, trip: { guardrail: string; reason: string }): Termination {
  return { reason: "guardrailTripped", iterations: context.loop.iteration, guardrail: trip.guardrail, detail: trip.reason };
}

/** The feedback the model reads, as a user message. */
export function feedbackMessage(stage: GuardrailStage, guardrail: string, feedback: string): Message {
  return human(stage === "input" ? `A check of the request (${guardrail}) says: ${feedback}` : `Your answer was not accepted (${guardrail}): ${feedback}. Answer again.`);
}

/**
 * A retry: the model reads the feedback, and the loop goes on (through CheckBudget: an iteration).
 * An output retry takes the answer back (done, finalAnswer); an input retry marks the guardrails of
 * its mode as having had their say.
 */
export function applyGuardrailRetry(context: AgentContext, access: StateAccess, stage: GuardrailStage, mode: GuardrailMode | undefined, outcome: { guardrail: string; feedback: string }): AgentContext {
  let state = access.append(context.state, "messages", [feedbackMessage(stage, outcome.guardrail, outcome.feedback)]);
  if (stage === "output") state = access.write(state, { done: false, finalAnswer: null });
  const next = { ...context, state };
  return mode === undefined ? next : markInputGuarded(next, mode);
}
