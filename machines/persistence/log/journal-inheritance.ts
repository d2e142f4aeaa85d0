import { z } from "zod";
import { builtOnce } from "../../../tools/built-once.js";
import type { JournalEntry, JournalKey } from "../../../actors/tool-journal.js";
import type { PersistedAgent } from "../persistence.js";

/**
 * What a fork keeps of the original's tool journal: the calls the original had decided before the
 * fork point. A call of an earlier iteration, or of the checkpoint's own batch (the checkpoint was
 * taken in `Executing` or `AwaitingApproval`), is answered from the original's entry, so a call the
 * original ran (or began) is never run again by the fork. Calls of the checkpoint's iteration that
 * the checkpoint did not hold yet (it was taken before the model answered) are the fork's own: the
 * fork asks the model again, and its calls may reuse the original's ids for other work.
 */
const JournalInheritanceSchema = builtOnce(() =>
  z.object({
    iteration: z.number().int().min(0),
    /** Call ids of the checkpoint's batch (its `loop.decisions`). */
    calls: z.array(z.string()),
  }),
);
export type JournalInheritance = z.infer<ReturnType<typeof JournalInheritanceSchema>>;

/** Where a fork comes from: the original run and which of its journal entries the fork sees. */
export interface ForkOrigin {
  runId: string;
  inherit: JournalInheritance;
}

/** The inheritance of a fork taken at this checkpoint. */
export function inheritanceAt(record: PersistedAgent): JournalInheritance {
  const loop = (record.snapshot.context as { loop?: { decisions?: { callId?: unknown }[] } } | undefined)?.loop;
  const calls = Array.isArray(loop?.decisions) ? loop.decisions.flatMap((d) => (typeof d?.callId === "string" ? [d.callId] : [])) : [];
  return { iteration: record.iteration, calls };
}

/** The key under which the original's journal answers this call of the fork, or undefined when the call is the fork's own. */
export function inheritedKey(key: JournalKey, origin: ForkOrigin | undefined): JournalKey | undefined {
  if (!origin) return undefined;
  const { iteration, calls } = origin.inherit;
  if (key.iteration < iteration || (key.iteration === iteration && calls.includes(key.callId))) return { ...key, runId: origin.runId };
  return undefined;
}

/** Parse stored inheritance text (a store column); undefined when the run is no fork. */
export function readInheritance(text: string | null | undefined): JournalInheritance | undefined {
  if (text === null || text === undefined) return undefined;
  return JournalInheritanceSchema().parse(JSON.parse(text));
}

/** One journal entry with its key, as a store lists a run's journal. */
export interface KeyedEntry {
  key: JournalKey;
  entry: JournalEntry;
}

/**
 * The entries a run's lookups answer from: its own, then what it inherits, recursively.
 * `chain[0]` is the run, each next element the run the previous one was forked from (with that
 * one's own entries); keys come back as the first run's.
 */
export function effectiveEntries(chain: readonly { runId: string; origin?: ForkOrigin; entries: readonly KeyedEntry[] }[]): KeyedEntry[] {
  const found = new Map<string, KeyedEntry>();
  const first = chain[0];
  if (!first) return [];
  const visit = (index: number, accepts: (key: JournalKey) => boolean) => {
    const link = chain[index];
    if (!link) return;
    for (const { key, entry } of link.entries) {
      const own = { ...key, runId: first.runId };
      const text = `${own.iteration}\u0000${own.callId}`;
      if (!found.has(text) && accepts(own)) found.set(text, { key: own, entry });
    }
    const origin = link.origin;
    if (origin) visit(index + 1, (key) => accepts(key) && inheritedKey({ ...key, runId: link.runId }, origin) !== undefined);
  };
  visit(0, () => true);
  return [...found.values()];
}
