import type { GuardCall, GuardContext } from "../guard.js";

/**
 * The calls of the batch before `call` that a counting guard lets through, in batch order.
 * Budgets and rate limits count them as already made, since the executor runs the whole batch
 * right after Preflight: a batch of 5 calls against a budget of 3 gets exactly the first 3.
 * `admits(candidate, before)` is the guard's own verdict; calls another guard denies still count
 * (a guard cannot see the others' verdicts), which errs on the side of fewer calls.
 * Calls already in the history (a batch checked again after a restore) are not counted twice.
 */
export function earlierAdmitted(
  call: GuardCall,
  ctx: GuardContext,
  admits: (candidate: GuardCall, before: readonly GuardCall[]) => boolean,
): GuardCall[] {
  const recorded = new Set(ctx.history.map((record) => record.callId));
  const admitted: GuardCall[] = [];
  for (const candidate of ctx.batch) {
    if (candidate.id === call.id) break;
    if (recorded.has(candidate.id)) continue;
    if (admits(candidate, admitted)) admitted.push(candidate);
  }
  return admitted;
}

/** History entries other than this batch's call itself (it may be there after a restore). */
export function historyBefore(call: GuardCall, ctx: GuardContext) {
  return ctx.history.filter((record) => record.callId !== call.id);
}
