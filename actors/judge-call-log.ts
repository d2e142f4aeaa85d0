import { z } from "zod";
import { JianmuError } from "../tools/jianmu-error.js";
import type { UnreportedSpend } from "./model-client.js";
import { RunStoppedError, type JournalKey, type ToolJournal } from "./tool-journal.js";

/**
 * The budgeted model calls of a guardrail step (an LLM judge's, through `ctx.budgeted`), written to
 * the run's tool journal before each is made, with the most it may cost. A run restored while its
 * guardrails ran checks again, and the process that saved it may have made (and been billed for)
 * some of those calls without the run hearing back: the restored step reads them here and counts
 * each at that bound, as a lost model reply counts (actors/spend.ts, `beginBudgetedCall`).
 */

/** What a judge call's journal entry says in its `name`: the most the call may have cost. */
const JudgeCallMarkSchema = z.object({ judgeCall: z.object({ tokens: z.number().nonnegative(), cost: z.number().nonnegative() }) });

/** Where a step's judge calls are journaled: the run, its iteration and the guardrails' stage. */
export interface JudgeCallScope {
  runId: string;
  iteration: number;
  stage: string;
}

/** A judge call was not made: the journal could not record it, and a call nobody recorded could be lost to the budget. */
export class JudgeCallNotRecordedError extends JianmuError {
  static override readonly errorCode = "JUDGE_CALL_NOT_RECORDED";
  override name = "JudgeCallNotRecordedError";
}

/** The journal key of a step's `n`th judge call (outside the model's call ids, which never hold a `jianmu.judge.` prefix in practice). */
function keyOf(scope: JudgeCallScope, n: number): JournalKey {
  return { runId: scope.runId, iteration: scope.iteration, callId: `jianmu.judge.${scope.stage}.${n}` };
}

/** The bound a journal entry records, or undefined when it is not a judge call's (another writer's entry under the same key). */
function boundOf(entry: { state: string; name?: string } | undefined): UnreportedSpend | undefined {
  if (entry?.state !== "started" || entry.name === undefined) return undefined;
  let mark: unknown;
  try {
    mark = JSON.parse(entry.name);
  } catch {
    return undefined;
  }
  const parsed = JudgeCallMarkSchema.safeParse(mark);
  return parsed.success ? parsed.data.judgeCall : undefined;
}

const NOT_CALLING = "not calling the model for the guardrail (with a budget, each call a guardrail makes is recorded first, so that a restored run counts it)";

/** The most a journal holds for one step: past it the scan stops (a run never makes this many judge calls in one step). */
const MAX_CALLS = 10_000;

export class JudgeCallLog {
  private next = 0;
  /** Why the earlier calls could not be read, when they could not. */
  private unread: { error: unknown } | undefined;

  constructor(
    private readonly journal: ToolJournal,
    private readonly scope: JudgeCallScope,
  ) {}

  /**
   * The judge calls an earlier process of this run began in this step, and what they may have cost
   * together (their bounds); later calls are numbered after them. Undefined when there were none, or
   * when the journal could not be read: the step's calls are then refused (`begin` throws), as a
   * call nobody could count must not be made.
   */
  async earlier(): Promise<UnreportedSpend | undefined> {
    const total = { tokens: 0, cost: 0 };
    try {
      for (; this.next < MAX_CALLS; this.next++) {
        const entry = await this.journal.lookup(keyOf(this.scope, this.next));
        if (!entry) break;
        const bound = boundOf(entry);
        total.tokens += bound?.tokens ?? 0;
        total.cost += bound?.cost ?? 0;
      }
    } catch (error) {
      this.unread = { error };
    }
    return total.tokens > 0 || total.cost > 0 ? total : undefined;
  }

  /**
   * Record a call about to be made, with the most it may cost. Throws `JudgeCallNotRecordedError`
   * when the journal cannot take it (the call is then not made), and a journal's `RunStoppedError`
   * as it is (the run goes on elsewhere).
   */
  async begin(bound: UnreportedSpend): Promise<void> {
    if (this.unread) throw new JudgeCallNotRecordedError(`${NOT_CALLING}: the calls an earlier process of the run made here could not be read from the tool journal`, { cause: this.unread.error });
    const mark = JSON.stringify({ judgeCall: { tokens: bound.tokens, cost: bound.cost } });
    // A key already taken (another copy of the run got there first) is skipped: each call has its own entry.
    while (this.next < MAX_CALLS) {
      let claimed: boolean;
      try {
        claimed = (await this.journal.started(keyOf(this.scope, this.next++), mark)) !== false;
      } catch (error) {
        if (error instanceof RunStoppedError) throw error;
        throw new JudgeCallNotRecordedError(`${NOT_CALLING}: the tool journal could not record it`, { cause: error });
      }
      if (claimed) return;
    }
    throw new JudgeCallNotRecordedError(`${NOT_CALLING}: this step has already made ${MAX_CALLS} of them`);
  }
}
