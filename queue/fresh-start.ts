import type { LoopContext } from "../machines/contract/context.js";
import { STATE_TAGS, tagsAt } from "../machines/contract/state-tags.js";
import type { PersistedAgent } from "../machines/persistence/persistence.js";
import { reactConfigOf } from "../machines/react-machine.js";

/**
 * A checkpoint that restoring is the same as starting the run again from its input: the first
 * model call about to be made, with nothing done, spent or fixed in time before it (no call, no
 * deadline, no spend, no guardrail passed). The queue already holds the input (submit stored it), so
 * a worker need not write this checkpoint: a run lost before its next one is claimed again and
 * starts over, where the checkpoint would have put it. Not with a budget: restored from the
 * checkpoint, the run counts the call the lost process may have made (the call it was waiting on);
 * started over, it would not, and a run lost again and again in its first call would spend uncounted.
 */
export function startsOver(machine: { root: unknown; config: object }, record: PersistedAgent): boolean {
  if (record.iteration !== 0 || !tagsAt(machine, record.snapshot.value).has(STATE_TAGS.modelCall)) return false;
  const config = reactConfigOf(machine);
  if (config?.maxBudgetTokens !== undefined || config?.maxBudgetCost !== undefined) return false;
  const loop = (record.snapshot as { context?: { loop?: Partial<LoopContext> } }).context?.loop;
  if (!loop) return false;
  return (
    loop.iteration === 0 &&
    loop.history?.length === 0 &&
    loop.termination === null &&
    loop.deadline === undefined &&
    loop.spend === undefined &&
    loop.inputGuarded === undefined &&
    loop.delegation === undefined
  );
}
