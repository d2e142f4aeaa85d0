import { z } from "zod";
import { builtOnce } from "../../tools/built-once.js";
import type { Guard, GuardCall, GuardContext, GuardDecision } from "../guard.js";
import { earlierAdmitted, historyBefore } from "./batch-order.js";
import { GuardOptionsError, parseGuardOptions, times, ToolNameSchema } from "./options.js";

export interface CallBudgetOptions {
  /** Tool calls the whole run may make, all tools together. */
  maxCalls?: number;
  /** Calls each named tool may get in the run, e.g. `{ calculator: 3 }`. */
  perTool?: Record<string, number>;
}

const BudgetSchema = builtOnce(() => {
  const count = z.number().int("must be a whole number").nonnegative("must be 0 or more");
  return z.object({ maxCalls: count.optional(), perTool: z.record(ToolNameSchema(), count).optional() }).strict();
});

/**
 * Limits how many tool calls a run makes, in total and per tool. It counts the calls that started
 * earlier in the run (`ctx.history`) plus the calls before this one in the same batch. Over budget
 * is a deny the model reads, so it can answer with what it already has.
 */
export function callBudget(options: CallBudgetOptions): Guard {
  const parsed = parseGuardOptions("callBudget", BudgetSchema(), options);
  if (parsed.maxCalls === undefined && parsed.perTool === undefined) {
    throw new GuardOptionsError("callBudget", "options", "must set maxCalls, perTool or both (e.g. { maxCalls: 10, perTool: { search: 3 } })");
  }
  const perTool = new Map(Object.entries(parsed.perTool ?? {}));

  const verdict = (call: GuardCall, ctx: GuardContext, before: readonly GuardCall[]): GuardDecision => {
    const history = historyBefore(call, ctx);
    const toolLimit = perTool.get(call.name);
    if (toolLimit !== undefined) {
      const used = history.filter((r) => r.name === call.name).length + before.filter((c) => c.name === call.name).length;
      if (used >= toolLimit) {
        const reason =
          toolLimit === 0
            ? `${call.name} may not be called in this run. Answer with what you have.`
            : `${call.name} may be called at most ${times(toolLimit)} per run; this would be call ${used + 1}. Answer with what you have.`;
        return { decision: "deny", reason };
      }
    }
    if (parsed.maxCalls !== undefined) {
      const used = history.length + before.length;
      if (used >= parsed.maxCalls) {
        return {
          decision: "deny",
          reason: `this run may make at most ${parsed.maxCalls} tool call${parsed.maxCalls === 1 ? "" : "s"}; this would be call ${used + 1}. Answer with what you have.`,
        };
      }
    }
    return { decision: "allow" };
  };

  return (call, ctx) => {
    const before = earlierAdmitted(call, ctx, (candidate, admitted) => verdict(candidate, ctx, admitted).decision === "allow");
    return verdict(call, ctx, before);
  };
}
