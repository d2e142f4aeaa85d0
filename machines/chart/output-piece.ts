import { assign, enqueueActions } from "xstate";
import type { LLMOutput } from "../../actors/llm-step.js";
import { errorTermination } from "../contract/context.js";
import type { ChartBuild } from "./build.js";
import { acceptOutput, FINAL_RESULT_TOOL, recordOutputCheck, rejectOutput } from "./output.js";
import { defineActions, defineGuards, stateConfig, when, type DoneBranch } from "./piece.js";

/**
 * Structured output (`createReactMachine({ output })`): `CheckOutput` validates the final output
 * against the schema; a mismatch goes back to the model, past `config.outputRetries` the run fails.
 * Its pure context updates, the strategy and the check are in output.ts.
 */

export function outputImplementation(build: ChartBuild) {
  const { config, access, base } = build;
  // Only reached with `output`, which the plan exists for.
  const plan = () => build.outputPlan!;
  return {
    actions: defineActions({
      checkOutput: assign(({ context }) => recordOutputCheck(context, access, plan())),
      acceptOutput: assign(({ context }) => acceptOutput(context, access)),
      rejectOutput: enqueueActions(({ context, enqueue }) => {
        const check = context.loop.output;
        enqueue.emit({ type: "output.invalid", ...base(context), error: check?.status === "invalid" ? check.error : "", failures: context.loop.outputFailures ?? 0 });
        enqueue.assign(rejectOutput(context, access, plan()));
      }),
      /** Past `config.outputRetries`: the run fails with the last error and the raw text. */
      failOutput: assign(({ context }) => {
        const check = context.loop.output;
        const termination = errorTermination("invalidOutput", context.loop.iteration, {
          name: "OutputValidationError",
          message: check?.status === "invalid" ? check.error : "the final output was not accepted",
        });
        return { loop: { ...context.loop, termination: { ...termination, raw: check?.raw ?? "" } } };
      }),
    }),
    guards: defineGuards({
      finalResultCalled: ({ event }) => (event as { output?: Partial<LLMOutput> }).output?.toolCalls?.some((c) => c.name === FINAL_RESULT_TOOL) === true,
      outputValid: ({ context }) => context.loop.output?.status === "valid",
      outputRetriesLeft: ({ context }) => (context.loop.outputFailures ?? 0) <= config.outputRetries,
    }),
  };
}

/** On AgentLLM's reply (strategy "tool"): a final-result call goes straight to CheckOutput. */
export function finalResultBranch(build: ChartBuild): readonly DoneBranch<"llm">[] {
  if (!build.outputPlan?.tool) return [];
  return [
    {
      guard: "finalResultCalled",
      target: "CheckOutput",
      description: "The model called the final-result tool: its arguments are the output to check.",
      // The reply is recorded like any other before CheckOutput reads it.
      actions: "settleReply",
    },
  ];
}

/** CheckOutput, only with `output`; `accepted`: where a valid output goes. */
export function outputStates(build: ChartBuild, { accepted }: { accepted: string }) {
  const { target } = build;
  return when(build.features.output, {
    CheckOutput: stateConfig({
      description: "Validates the final output against the output schema; a mismatch goes back to the model (an iteration), past config.outputRetries the run fails (invalidOutput).",
      tags: ["output"],
      entry: "checkOutput",
      always: [
        { guard: "outputValid", target: accepted, description: "The output fits the schema.", actions: "acceptOutput" },
        { guard: "outputRetriesLeft", target: target("CheckBudget"), description: "It does not fit: the model is told why and tries again.", actions: "rejectOutput" },
        { target: target("Failed"), description: "Out of output retries: the run fails (invalidOutput).", actions: "failOutput" },
      ],
    }),
  });
}
