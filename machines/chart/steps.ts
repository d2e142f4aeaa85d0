import type { AnyActorLogic } from "xstate";

/** The steps AgentLLM and Executing wait on, by the name the step host answers with (`<step>.done`). */
export type StepName = "llm" | "executor";

/** Each step's logic, by the name `machine.provide({ actors })` knows it under (ACTOR_NAMES). */
const LOGIC_NAME = { llm: "llm", executor: "toolExecutor" } as const satisfies Record<StepName, string>;

/**
 * The logic of `step` in the machine the agent runs, after any `machine.provide({ actors })`: what
 * the state waiting on the step hands the step host (actors/step-host.ts) with its request. XState's
 * Actor keeps its machine as `logic`, and a machine its implementations.
 */
export function stepLogic(self: unknown, step: StepName): AnyActorLogic | undefined {
  const machine = (self as { logic?: { implementations?: { actors?: Record<string, unknown> } } }).logic;
  return machine?.implementations?.actors?.[LOGIC_NAME[step]] as AnyActorLogic | undefined;
}
