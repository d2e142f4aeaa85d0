import { storedJson } from "../machines/persistence/checkpoints/store.js";
import { AgentOutputSchema, type AgentOutput } from "../machines/contract/context.js";
import { RunQueueError } from "./errors.js";
import type { QueueSignal } from "./run-store.js";

/** A stored output (JSON text or already parsed) is checked before it is handed back: a damaged one is an error naming the run. */
function checkedOutput(stored: unknown, runId: string): AgentOutput {
  const checked = AgentOutputSchema.safeParse(storedJson(stored));
  if (checked.success) return checked.data;
  const issue = checked.error.issues[0];
  const where = issue && issue.path.length > 0 ? ` (output.${issue.path.join(".")}: ${issue.message})` : "";
  throw new RunQueueError("damaged", `wait: the stored output of run ${JSON.stringify(runId)} is damaged${where}; its checkpoint and journal are kept, inspect them or submit the run again`);
}

/** What a store gives its waiters to read with. */
export interface WaitSource {
  /**
   * The stored outputs of these runs, by run id: null for a run that has none yet; a run the store
   * does not have is left out. One statement for all of them.
   */
  outputs(runIds: readonly string[]): Promise<Map<string, unknown>>;
  /** The error a wait for a run the store does not have rejects with (`unknown_run`, naming where it looked). */
  unknownRun(runId: string): RunQueueError;
  subscribe(listener: (signal: QueueSignal) => void): () => void;
  /**
   * Since when (epoch ms) every `finished` signal reaches this process, without a gap; undefined
   * when notifications do not work right now (no LISTEN, or it is reconnecting). Waiters poll only then.
   */
  listeningSince(): number | undefined;
  /** How often to read while notifications do not work (read when the first waiter comes). */
  pollMs(): number;
}

/** With working notifications, everything is read once in this long anyway (a connection can die without anyone noticing). */
const SAFETY_READ_MS = 30_000;

interface Waiter {
  runId: string;
  resolve: (output: AgentOutput) => void;
  reject: (error: unknown) => void;
  signal: AbortSignal | undefined;
}

/**
 * Every `wait()` of one store, together: one subscription, one timer and one statement reading all
 * awaited runs per wake-up, and one abort listener per signal, however many wait. A `finished`
 * notification settles that run with the output it carries, or reads it at once; a `changed` one
 * (SQLite: another process wrote) reads every awaited run; the timer reads them all every `pollMs`
 * while notifications do not work (and once when they start again: something may have finished in
 * the gap). 2000 waiters cost what one does, and sharing an AbortSignal among them adds one listener.
 */
export class Waiters {
  private readonly byRun = new Map<string, Set<Waiter>>();
  private readonly bySignal = new Map<AbortSignal, { waiters: Set<Waiter>; onAbort: () => void }>();
  private unsubscribe: (() => void) | undefined;
  private timer: NodeJS.Timeout | undefined;
  private lastFullRead = 0;
  private reading = false;
  /** Runs to read this turn, together on the next (readSoon); true for a wait's first read, which must find the run. */
  private readonly soon = new Map<string, boolean>();

  constructor(private readonly source: WaitSource) {}

  async wait(runId: string, signal?: AbortSignal): Promise<AgentOutput> {
    if (signal?.aborted) throw abortError(signal, runId);
    const done = new Promise<AgentOutput>((resolve, reject) => this.add({ runId, resolve, reject, signal }));
    // Read after joining, so a run that finishes in between is seen one way or the other; the waits
    // begun in one turn of the event loop are read together (a caller awaiting many runs at once).
    this.readSoon(runId, { first: true });
    return done;
  }

  private add(waiter: Waiter): void {
    const forRun = this.byRun.get(waiter.runId) ?? new Set<Waiter>();
    forRun.add(waiter);
    this.byRun.set(waiter.runId, forRun);
    if (waiter.signal) {
      let shared = this.bySignal.get(waiter.signal);
      if (!shared) {
        const signal = waiter.signal;
        const waiters = new Set<Waiter>();
        const onAbort = () => {
          for (const w of [...waiters]) {
            this.remove(w);
            w.reject(abortError(signal, w.runId));
          }
        };
        shared = { waiters, onAbort };
        this.bySignal.set(signal, shared);
        signal.addEventListener("abort", onAbort, { once: true });
      }
      shared.waiters.add(waiter);
    }
    if (!this.unsubscribe) {
      this.unsubscribe = this.source.subscribe((signal) => {
        // Another process wrote, what is not known (SQLite): every awaited run is read, in one statement.
        if (signal.kind === "changed") return void this.readAllSoon();
        if (signal.kind !== "finished" || !this.byRun.has(signal.runId)) return;
        // The output came with the signal: nothing to read (unless it does not check out: the stored one decides).
        if (signal.output === undefined || !this.settleFromSignal(signal.runId, signal.output)) this.readSoon(signal.runId, { first: false });
      });
      this.timer = setInterval(() => void this.tick(), this.source.pollMs());
    }
  }

  private remove(waiter: Waiter): void {
    const forRun = this.byRun.get(waiter.runId);
    forRun?.delete(waiter);
    if (forRun?.size === 0) this.byRun.delete(waiter.runId);
    if (waiter.signal) {
      const shared = this.bySignal.get(waiter.signal);
      shared?.waiters.delete(waiter);
      if (shared?.waiters.size === 0) {
        waiter.signal.removeEventListener("abort", shared.onAbort);
        this.bySignal.delete(waiter.signal);
      }
    }
    if (this.byRun.size === 0 && this.unsubscribe) {
      this.unsubscribe();
      this.unsubscribe = undefined;
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  private settle(runId: string, stored: unknown): void {
    let output: AgentOutput;
    try {
      output = checkedOutput(stored, runId);
    } catch (error) {
      return this.fail(runId, error);
    }
    this.resolve(runId, output);
  }

  /** An output a signal carried: false (nothing settled) when it does not check out, so the stored one is read. */
  private settleFromSignal(runId: string, told: unknown): boolean {
    let output: AgentOutput;
    try {
      output = checkedOutput(told, runId);
    } catch {
      return false;
    }
    this.resolve(runId, output);
    return true;
  }

  private resolve(runId: string, output: AgentOutput): void {
    for (const waiter of [...(this.byRun.get(runId) ?? [])]) {
      this.remove(waiter);
      waiter.resolve(output);
    }
  }

  private fail(runId: string, error: unknown): void {
    for (const waiter of [...(this.byRun.get(runId) ?? [])]) {
      this.remove(waiter);
      waiter.reject(error);
    }
  }

  /** Read every awaited run when notifications cannot be trusted to say which finished. */
  private async tick(): Promise<void> {
    if (this.reading || this.byRun.size === 0) return;
    const since = this.source.listeningSince();
    const now = Date.now();
    if (since !== undefined && since < this.lastFullRead && now - this.lastFullRead < SAFETY_READ_MS) return;
    this.lastFullRead = now;
    this.reading = true;
    try {
      await this.read([...this.byRun.keys()]);
    } finally {
      this.reading = false;
    }
  }

  /**
   * Read a run a `finished` signal named (or a new wait's run), with every other one named in the
   * same turn of the event loop: a burst of finishes (one socket read of notifications), or of waits,
   * costs one statement, not one each.
   */
  private readSoon(runId: string, { first }: { first: boolean }): void {
    this.soon.set(runId, first || this.soon.get(runId) === true);
    if (this.soon.size > 1) return;
    setImmediate(() => {
      const firstReads = new Set([...this.soon].filter(([, isFirst]) => isFirst).map(([id]) => id));
      const runIds = [...this.soon.keys()];
      this.soon.clear();
      void this.read(runIds, firstReads);
    });
  }

  private readAllSoon(): void {
    for (const runId of this.byRun.keys()) this.readSoon(runId, { first: false });
  }

  /** `mustExist`: the runs whose waits have just begun, refused if the store does not have them. */
  private async read(runIds: readonly string[], mustExist: ReadonlySet<string> = new Set()): Promise<void> {
    let found: Map<string, unknown>;
    try {
      found = await this.source.outputs(runIds);
    } catch (error) {
      // The database is away (restarting, failing over): keep waiting; anything else is the callers'.
      if (error instanceof RunQueueError && error.problem === "connection") return;
      for (const runId of runIds) this.fail(runId, error);
      return;
    }
    for (const runId of runIds) {
      const stored = found.get(runId);
      if (stored !== undefined && stored !== null) this.settle(runId, stored);
      else if (stored === undefined && mustExist.has(runId)) this.fail(runId, this.source.unknownRun(runId));
    }
  }
}

function abortError(signal: AbortSignal, runId: string): Error {
  return signal.reason instanceof Error ? signal.reason : new Error(`wait for run ${runId} was aborted`);
}
