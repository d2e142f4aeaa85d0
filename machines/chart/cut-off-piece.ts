import { enqueueActions } from "xstate";
import { meteredSpend } from "../../actors/step-host.js";
import type { ChartBuild } from "./build.js";
import { defineActions } from "./piece.js";
import { addUnreported } from "./spend.js";

/**
 * A run that ends while a step runs (a model call cut off by a cancel, the deadline, a guardrail
 * tripping beside it) never hears what the step cost: its outcome is dropped with it. `Failed`
 * counts what the step may have been billed so far (actors/call-meter.ts, kept with the step host),
 * as an attempt that failed without a word is counted, so that a run's spending bounds its bill.
 */
export function cutOffImplementation(build: ChartBuild) {
  return {
    actions: defineActions({
      countCutOffStep: enqueueActions(({ context, enqueue, self }) => {
        // Pure transitions (machine.transition, the model-based tests) have no live actor, and so no step under way.
        const live = self.getSnapshot() as { children?: Record<string, object | undefined> } | undefined;
        const cut = meteredSpend(live?.children?.[build.childId("steps")]);
        if (cut) enqueue.assign({ loop: { ...context.loop, spend: addUnreported(context.loop.spend, cut) } });
      }),
    }),
  };
}
