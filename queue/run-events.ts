import type { Actor } from "xstate";
import type { ReactMachine } from "../machines/react-machine.js";

/**
 * A run's stream of events, kept in the store beside the run so that any process can follow it:
 * the worker holding the run appends (fenced by its token, like every other write of the run), and
 * followers in other processes read what came after the last event they saw. The queue does not
 * know what the events mean: `jianmu/http` writes its server-sent events here (web/server/store-events.ts).
 */

/** An event to append: its type and JSON-serialisable data. */
export interface RunEventInput {
  type: string;
  data: unknown;
}

/** An appended event with its sequence number in the run (1, 2, 3, ... with no gaps). */
export interface StoredRunEvent extends RunEventInput {
  seq: number;
}

export interface RunEventLog {
  /**
   * Append events after the run's last, in one write, if `token` is still the run's; false (nothing
   * written) when another worker holds it now. Followers are told (a `events` signal).
   */
  appendRunEvents(runId: string, token: number, events: readonly RunEventInput[]): Promise<boolean>;
  /** The run's events after `afterSeq`, in order, at most `limit`. */
  runEventsAfter(runId: string, afterSeq: number, limit: number): Promise<StoredRunEvent[]>;
  /** The sequence number of the run's last event (0 before its first): following after it gives only what comes next. */
  lastRunEventSeq(runId: string): Promise<number>;
  /** Delete the events of runs that finished before this time (epoch ms); resolves with how many runs were pruned. */
  pruneRunEvents(finishedBefore: number): Promise<number>;
}

/** Events kept for runs in memory (MemoryRunStore). */
export class MemoryRunEvents {
  private readonly byRun = new Map<string, StoredRunEvent[]>();

  append(runId: string, events: readonly RunEventInput[]): void {
    const log = this.byRun.get(runId) ?? [];
    for (const event of events) log.push({ seq: log.length + 1, type: event.type, data: structuredClone(event.data) });
    this.byRun.set(runId, log);
  }

  last(runId: string): number {
    return this.byRun.get(runId)?.length ?? 0;
  }

  after(runId: string, afterSeq: number, limit: number): StoredRunEvent[] {
    return (this.byRun.get(runId) ?? []).slice(Math.max(0, afterSeq), Math.max(0, afterSeq) + limit);
  }

  prune(runIds: Iterable<string>): number {
    let pruned = 0;
    for (const runId of runIds) if (this.byRun.delete(runId)) pruned++;
    return pruned;
  }
}

/** A run a worker has just made (or restored) the actor of, before it starts. */
export interface ObservedRun {
  runId: string;
  agent: string;
  /** The claim's fencing token: writes about the run carry it. */
  token: number;
  actor: Actor<ReactMachine>;
  machine: ReactMachine;
  /** Restored from a checkpoint (its past was observed by an earlier claim). */
  resumed: boolean;
}

/** What an observer keeps of a run: the worker flushes it before the run's output is written, and closes it when it lets the run go. */
export interface RunObservation {
  flush(): Promise<void>;
  /**
   * `outputRecorded`: the run's own output is stored (the close comes after that write), so what tells
   * the run's end may be written now; false when the run was let go otherwise (parked, lost, given up,
   * or ended with another output), and then its end is not told from here.
   */
  close(options: { outputRecorded: boolean }): void;
}

/** `startWorker({ observe })`: watch each claimed run's actor (jianmu/http streams its events to the store with one). */
export type RunObserver = (run: ObservedRun) => RunObservation;
