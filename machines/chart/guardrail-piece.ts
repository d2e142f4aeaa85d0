import { assign, enqueueActions } from "xstate";
import { createGuardrailActor, type GuardrailMode, type GuardrailOutcome, type GuardrailStage } from "../../actors/guardrail.js";
import type { ToolCall } from "../../actors/messages.js";
import { STATE_TAGS } from "../contract/state-tags.js";
import type { AgentContext } from "../contract/context.js";
import type { ChartBuild } from "./build.js";
import type { Usage } from "../../actors/model-client.js";
import { applyGuardrailRetry, applyGuardrailSpend, guardrailInput, guardrailMoney, guardrailSubject, guardrailTermination, inputUnguarded, markInputGuarded, tripOf } from "./guardrails.js";
import { FINAL_RESULT_TOOL } from "./output.js";
import { defineActions, defineGuards, stateConfig, when, type AgentInvoke, type Branch, type DoneBranch } from "./piece.js";

/**
 * Guardrails (`createReactMachine({ inputGuardrails, outputGuardrails })`): checks of the run's input
 * and of its final answer, each an invoked actor (actors/guardrail.ts) whose verdict is a transition:
 * pass goes on, trip fails the run (guardrailTripped), retry sends feedback to the model through
 * CheckBudget (an iteration).
 *
 * - blocking input guardrails: `CheckInput → GuardingInput` before the first round's model call;
 * - parallel input guardrails: invoked on `ChildRunning` beside the round (a trip or retry leaves
 *   the round, so the model call in flight is cancelled); a reply that comes before their verdict
 *   waits in `AwaitingInputCheck`;
 * - output guardrails: `GuardingOutput`, after the answer (and `CheckOutput`), before `Succeeded`.
 *
 * Their pure context updates are in guardrails.ts.
 */

type Params = { stage: GuardrailStage; mode?: GuardrailMode };

export function guardrailImplementation(build: ChartBuild) {
  const { options, access, base } = build;
  const inputs = options.inputGuardrails ?? [];
  const outcomeOf = (event: unknown) => (event as { output?: GuardrailOutcome }).output;
  return {
    actors: {
      // With a budget, a judge's calls are recorded in the tool journal before they are made (a restored step counts them).
      inputGuardrails: createGuardrailActor(inputs.filter((g) => g.mode !== "parallel"), options.journal),
      // Beside the round's model call they may make no budgeted call: nothing to record.
      parallelGuardrails: createGuardrailActor(inputs.filter((g) => g.mode === "parallel")),
      outputGuardrails: createGuardrailActor(options.outputGuardrails ?? [], options.journal),
    },
    actions: defineActions({
      /** What the guardrails' budgeted model calls spent joins the run's usage, whatever they decided. */
      countGuardrailSpend: assign(({ context, event }) => applyGuardrailSpend(context, access, outcomeOf(event)?.spent)),
      /** A guardrail tripped (or the step crashed, which trips too): the run fails, naming it. */
      tripGuardrail: enqueueActions(({ context, event, enqueue }, params: Params) => {
        const trip = tripOf(event as { output?: unknown; error?: unknown });
        enqueue.assign({ loop: { ...context.loop, termination: guardrailTermination(context, trip) } });
        enqueue.emit({ type: "guardrail.tripped", ...base(context), stage: params.stage, guardrail: trip.guardrail, reason: trip.reason });
      }),
      /** A guardrail sent feedback: the model reads it next round. */
      retryGuardrail: enqueueActions(({ context, event, enqueue }, params: Params) => {
        const outcome = outcomeOf(event);
        if (outcome?.verdict !== "retry") return;
        enqueue.assign(applyGuardrailRetry(context, access, params.stage, params.mode, outcome));
        enqueue.emit({ type: "guardrail.retried", ...base(context), stage: params.stage, guardrail: outcome.guardrail, feedback: outcome.feedback });
      }),
      markInputGuarded: assign(({ context }, params: { mode: GuardrailMode }) => markInputGuarded(context, params.mode)),
    }),
    guards: defineGuards({
      guardrailTripped: ({ event }) => outcomeOf(event)?.verdict === "trip",
      guardrailRetry: ({ event }) => outcomeOf(event)?.verdict === "retry",
      blockingInputUnguarded: ({ context }) => inputUnguarded(context, "blocking"),
      parallelInputUnguarded: ({ context }) => inputUnguarded(context, "parallel"),
      parallelInputGuarded: ({ context }) => !inputUnguarded(context, "parallel"),
      /** The parallel guardrails passed and the reply that waited for them called the final-result tool. */
      guardedFinalResult: ({ context }) => !inputUnguarded(context, "parallel") && build.read<ToolCall[]>(context, "actions").some((c) => c.name === FINAL_RESULT_TOOL),
      /** ...or other tools. */
      guardedToolCalls: ({ context }) => !inputUnguarded(context, "parallel") && build.read<ToolCall[]>(context, "actions").length > 0,
    }),
  };
}

/** What the guardrails' budgeted calls may spend now (`besideModelCall`: the parallel input guardrails). */
const moneyOf = (build: ChartBuild, context: AgentContext, besideModelCall = false) => guardrailMoney(build.config, context, build.read<Usage>(context, "usage"), besideModelCall);

/** The verdict's transitions; `stage` and `mode` go to the actions, `pass` is where a pass goes (with its actions). */
function verdictBranches(build: ChartBuild, params: Params, what: string) {
  const { target } = build;
  return [
    { guard: "guardrailTripped", target: target("Failed"), description: `A ${what} guardrail tripped: the run fails (guardrailTripped).`, actions: ["countGuardrailSpend", { type: "tripGuardrail", params }] },
    {
      guard: "guardrailRetry",
      target: target("CheckBudget"),
      description: `A ${what} guardrail sent feedback: the model reads it and tries again (an iteration).`,
      actions: ["countGuardrailSpend", { type: "retryGuardrail", params }],
    },
  ] as const;
}

/** CheckInput and GuardingInput, only with blocking input guardrails; `next`: the round's first step. */
export function inputGuardrailStates(build: ChartBuild, { next }: { next: string }) {
  const params: Params = { stage: "input", mode: "blocking" };
  return when(build.features.blockingInput, {
    CheckInput: stateConfig({
      description: "Before the first model call of the run, the input guardrails check the input; afterwards the round goes straight on.",
      always: [
        { guard: "blockingInputUnguarded", target: "GuardingInput", description: "The input is not checked yet: check it." },
        { target: next, description: "The input was checked: go on with the round." },
      ],
    }),
    GuardingInput: stateConfig({
      description: "The blocking input guardrails check the run's input (the last user message) before any model call.",
      tags: ["guardrail", STATE_TAGS.stable],
      invoke: {
        id: build.childId("inputGuardrails"),
        src: "inputGuardrails",
        input: ({ context }) => guardrailInput(context, guardrailSubject(context, build.access, "input", undefined), build.view(context), moneyOf(build, context)),
        onDone: [
          ...verdictBranches(build, params, "blocking input"),
          { target: next, description: "Every input guardrail passed: go on with the round.", actions: ["countGuardrailSpend", { type: "markInputGuarded", params: { mode: "blocking" } }] },
        ],
        onError: { target: build.target("Failed"), description: "The guardrail step crashed: that trips (guardrailTripped).", actions: { type: "tripGuardrail", params } },
      },
    }),
  });
}

/** GuardingOutput, only with output guardrails; `accepted`: where a passed answer goes. */
export function outputGuardrailStates(build: ChartBuild, { accepted }: { accepted: string }) {
  const params: Params = { stage: "output" };
  return when(build.features.outputGuardrails, {
    GuardingOutput: stateConfig({
      description: "The output guardrails check the final answer (and the typed output) before the run succeeds.",
      tags: ["guardrail", STATE_TAGS.stable],
      invoke: {
        id: build.childId("outputGuardrails"),
        src: "outputGuardrails",
        input: ({ context }) => guardrailInput(context, guardrailSubject(context, build.access, "output", build.outputPlan), build.view(context), moneyOf(build, context)),
        onDone: [...verdictBranches(build, params, "output"), { target: accepted, description: "Every output guardrail passed: the run has its answer.", actions: "countGuardrailSpend" }],
        onError: { target: build.target("Failed"), description: "The guardrail step crashed: that trips (guardrailTripped).", actions: { type: "tripGuardrail", params } },
      },
    }),
  });
}

/** What parallel input guardrails add to the round; nothing without them. */
export interface ParallelGuardrailHooks {
  /** Invoked on ChildRunning: the guardrails, beside the whole first round. */
  invoke: AgentInvoke[];
  /** First among the model reply's branches: a reply before their verdict waits. */
  reply: readonly DoneBranch<"llm">[];
}

export function parallelGuardrailHooks(build: ChartBuild): ParallelGuardrailHooks {
  if (!build.features.parallelInput) return { invoke: [], reply: [] };
  const params: Params = { stage: "input", mode: "parallel" };
  return {
    invoke: [
      {
        id: build.childId("parallelGuardrails"),
        src: "parallelGuardrails",
        // Once they have answered, later rounds invoke a step that waits for nothing.
        input: ({ context }) =>
          guardrailInput(context, guardrailSubject(context, build.access, "input", undefined), build.view(context), moneyOf(build, context, true), !inputUnguarded(context, "parallel")),
        onDone: [
          ...verdictBranches(build, params, "parallel input"),
          { description: "Every parallel input guardrail passed: a reply waiting for them goes on.", actions: ["countGuardrailSpend", { type: "markInputGuarded", params: { mode: "parallel" } }] },
        ],
        onError: { target: build.target("Failed"), description: "The guardrail step crashed: that trips (guardrailTripped).", actions: { type: "tripGuardrail", params } },
      },
    ],
    reply: [
      {
        guard: "parallelInputUnguarded",
        target: "AwaitingInputCheck",
        description: "The reply came before the parallel input guardrails' verdict: it waits for them.",
        actions: "settleReply",
      },
    ],
  };
}

/** AwaitingInputCheck, only with parallel input guardrails: once they pass, the reply goes where it would have. */
export function parallelGuardrailStates(build: ChartBuild, { finalResult, tools, condition }: { finalResult: string | undefined; tools: string; condition: string }) {
  const routes: Branch[] = [
    ...(finalResult !== undefined ? [{ guard: "guardedFinalResult", target: finalResult, description: "Passed; the reply called the final-result tool: check the output." } as const] : []),
    { guard: "guardedToolCalls", target: tools, description: "Passed; the reply calls tools: run them." },
    { guard: "parallelInputGuarded", target: condition, description: "Passed; a plain reply: check whether the run is done." },
  ];
  return when(build.features.parallelInput, {
    AwaitingInputCheck: stateConfig({
      description: "The reply is in, the parallel input guardrails are still checking: it waits for their verdict.",
      tags: ["guardrail", STATE_TAGS.stable],
      always: routes,
    }),
  });
}
