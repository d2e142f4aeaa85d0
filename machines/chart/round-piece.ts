import { assign } from "xstate";
import type { Message } from "../../actors/messages.js";
import type { Usage } from "../../actors/model-client.js";
import type { ChartBuild } from "./build.js";
import { defineActions, stateConfig, when } from "./piece.js";
import { planRound } from "./prepare-round.js";

/**
 * Round preparation (`prepareRound`): `PreparingRound` asks the user's function how this round's
 * model call differs from the default and keeps the validated plan in `loop.round`, which
 * round-request.ts applies to the LLM step's input. The check of the plan is in prepare-round.ts.
 */

export function roundImplementation(build: ChartBuild) {
  const { read } = build;
  const prepare = build.options.prepareRound;
  return {
    actions: defineActions({
      /** PreparingRound: ask `prepareRound` for this round's plan; a bad plan is a programmer error and fails the actor. */
      planRound: assign(({ context }) => ({
        loop: {
          ...context.loop,
          round: planRound(prepare!, {
            runId: context.loop.runId,
            iteration: context.loop.iteration,
            rounds: read<number>(context, "rounds"),
            messages: read<Message[]>(context, "messages"),
            state: build.view(context),
            tools: context.loop.tools.map((t) => t.name),
            usage: read<Usage>(context, "usage"),
          }),
        },
      })),
    }),
  };
}

/** PreparingRound, only with `prepareRound`; `next`: the step after it (CheckContext or the model call). */
export function roundStates(build: ChartBuild, { next }: { next: string }) {
  return when(build.features.prepareRound, {
    PreparingRound: stateConfig({
      description: "Asks prepareRound for this round's model, tools, toolChoice, extraParams and systemPrompt, validated, kept in loop.round.",
      tags: ["round"],
      entry: "planRound",
      always: { target: next, description: "The round's plan is kept: go on to the model." },
    }),
  });
}
