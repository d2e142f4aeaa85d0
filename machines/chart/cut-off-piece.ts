import { enqueueActions } from "xstate";
import { meteredUnder } from "../../actors/step-host.js";
import { defineActions } from "./piece.js";
import { addUnreported } from "./spend.js";

/**
 * A run that ends while a step runs (a model call cut off by a cancel, the deadline, a guardrail
 * tripping beside it) never hears what the step cost: its outcome is dropped with it. `Failed`
 * counts what the step may have been billed so far (actors/call-meter.ts, kept by the actor running
 * the step: the step host, the summary, a guardrail step), and what its nested agents' steps may
 * have, as an attempt that failed without a word is counted, so that a run's spending bounds its bill.
 */
export function cutOffImplementation() {
  return {
    actions: defineActions({
      countCutOffStep: enqueueActions(({ context, enqueue, self }) => {
        // Its own steps', and its nested agents' (stopped with it, they never report theirs).
        // Pure transitions (machine.transition, the model-based tests) have no live actor: nothing is under way.
        const cut = meteredUnder(self);
        if (cut) enqueue.assign({ loop: { ...context.loop, spend: addUnreported(context.loop.spend, cut) } });
      }),
    }),
  };
}
