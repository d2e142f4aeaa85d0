import type { AnyActorLogic } from "xstate";

/**
 * The steps AgentLLM and Executing wait on, by the name `machine.provide({ actors })` knows their
 * logic under (ACTOR_NAMES); the step host answers each with `<step>.done` / `<step>.error`.
 */
export type StepName = "llm" | "toolExecutor";

/**
 * The logic of `step` in the machine the agent runs, after any `machine.provide({ actors })`: what
 * the state waiting on the step hands the step host (actors/step-host.ts) with its request. XState's
 * Actor keeps its machine as `logic`, and a machine its implementations.
 */
export function stepLogic(self: unknown, step: StepName): AnyActorLogic | undefined {
  const machine = (self as { logic?: { implementations?: { actors?: Record<string, unknown> } } }).logic;
  return machine?.implementations?.actors?.[step] as AnyActorLogic | undefined;
}
