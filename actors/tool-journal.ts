import { z } from "zod";
import { JianmuError } from "../tools/jianmu-error.js";
import { ToolOutcomeSchema, type ToolOutcome } from "./tool-outcome.js";

/** A journaled outcome is checked against this schema when it is read back from storage. */
export { ToolOutcomeSchema };

/**
 * The tool journal: a durable record of which calls of a run started and which completed, written
 * by the executor *before* a call's result reaches the machine. A run restored from an older
 * checkpoint asks it first, so a call whose outcome is journaled is answered from the journal
 * instead of running again (at most once across crashes).
 */

/** Identifies one call. The iteration is part of it: call ids are only unique within one model reply
 *  (some servers reuse `call_0` every round, and `scriptedModel` numbers calls per process). */
export interface JournalKey {
  runId: string;
  iteration: number;
  callId: string;
}

/** One call's entry, as a journal store hands it back (checked against this when read from storage). */
export const JournalEntrySchema = z.discriminatedUnion("state", [
  /** The call was about to run and never reported back: it may or may not have taken effect. */
  z.object({ state: z.literal("started"), name: z.string() }),
  z.object({ state: z.literal("completed"), outcome: ToolOutcomeSchema }),
]);
export type JournalEntry = z.infer<typeof JournalEntrySchema>;

type MaybePromise<T> = T | Promise<T>;

/**
 * Thrown by a journal when the run may not go on in this process: another worker took it over, or
 * its worker gave it up because the database stayed away (a queue store). Whoever throws it has
 * already stopped the run, which continues elsewhere from its last checkpoint; the executor ends the
 * batch without an observation (telling the model "the tool failed" would be untrue there).
 */
export class RunStoppedError extends JianmuError {
  static override readonly errorCode: string = "RUN_STOPPED_ERROR";
  override name = "RunStoppedError";
  constructor(
    readonly runId: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export interface ToolJournal {
  /**
   * Claims the call, right before the tool runs: true when this caller wrote the `started` entry,
   * false when an entry for the key already existed (another copy of the run claimed it, or it
   * already completed). Never overwrites. The executor runs the tool only when it won the claim.
   */
  started(key: JournalKey, name: string): MaybePromise<boolean>;
  /**
   * Written after the tool returned (or failed, or timed out), before the machine sees the outcome.
   * The first recorded outcome wins: an entry already `completed` is never overwritten (a second
   * copy of the run that found the call `started` must not replace the real outcome with "unknown").
   */
  completed(key: JournalKey, outcome: ToolOutcome): MaybePromise<void>;
  lookup(key: JournalKey): MaybePromise<JournalEntry | undefined>;
  /** Drop every entry of a run (once it is finished and its checkpoint deleted). */
  forget(runId: string): MaybePromise<void>;
}

export function journalKeyText(key: JournalKey): string {
  return JSON.stringify([key.runId, key.iteration, key.callId]);
}

/** A journal in memory: survives restoring a snapshot in the same process, not a crash. For tests. */
export class MemoryToolJournal implements ToolJournal {
  private readonly entries = new Map<string, { runId: string; entry: string }>();

  /** A synchronous check-and-set: two copies of a run in one process cannot both win. */
  started(key: JournalKey, name: string): boolean {
    const text = journalKeyText(key);
    if (this.entries.has(text)) return false;
    this.entries.set(text, { runId: key.runId, entry: JSON.stringify({ state: "started", name }) });
    return true;
  }

  completed(key: JournalKey, outcome: ToolOutcome): void {
    if (this.lookup(key)?.state === "completed") return;
    // Stored as JSON so that what comes back is a copy, as from a real store.
    this.entries.set(journalKeyText(key), { runId: key.runId, entry: JSON.stringify({ state: "completed", outcome }) });
  }

  lookup(key: JournalKey): JournalEntry | undefined {
    const found = this.entries.get(journalKeyText(key));
    return found ? (JSON.parse(found.entry) as JournalEntry) : undefined;
  }

  forget(runId: string): void {
    for (const [text, { runId: owner }] of this.entries) if (owner === runId) this.entries.delete(text);
  }

  /** Every entry of a run, with its key (a store copies a run's journal with it). */
  entriesOf(runId: string): { key: JournalKey; entry: JournalEntry }[] {
    const found: { key: JournalKey; entry: JournalEntry }[] = [];
    for (const [text, { runId: owner, entry }] of this.entries) {
      if (owner !== runId) continue;
      const [, iteration, callId] = JSON.parse(text) as [string, number, string];
      found.push({ key: { runId, iteration, callId }, entry: JSON.parse(entry) as JournalEntry });
    }
    return found;
  }

  /** How many calls are journaled (tests). */
  get size(): number {
    return this.entries.size;
  }
}
