import type { ObservedRun, RunEventInput, RunEventLog, RunObservation, RunObserver } from "../../queue/run-events.js";
import type { RunEvent } from "../protocol.js";
import { translateRunEvents } from "./run-events.js";

/** Events gathered this long are written in one statement (a text delta waits at most this). */
const BATCH_MS = 5;
/** One claim writes at most this many events; past it, text deltas are dropped (the messages still come). */
const MAX_EVENTS_PER_CLAIM = 20_000;
/** Events kept while the store cannot be written; past it, text deltas are dropped. */
const MAX_BUFFERED = 2_000;

/**
 * `startWorker({ store, agents, observe: storeRunEvents(store) })`: each claimed run's server-sent
 * events (the ones `jianmu/http` streams) are appended to the run store as the run goes, batched
 * every few milliseconds and fenced by the claim's token, so a page following the run from any
 * `agentHandler({ store })` replica sees them. The handler's embedded worker uses it; give it to
 * the workers behind HTTP-only replicas (`worker: false`) too.
 */
export function storeRunEvents(store: Pick<RunEventLog, "appendRunEvents">): RunObserver {
  return (run) => new EventWriter(store, run).observe();
}

class EventWriter implements RunObservation {
  private buffer: RunEventInput[] = [];
  private written = 0;
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> = Promise.resolve();
  /**
   * The event that ends the run's stream (run.finished, run.error), written only once the run's output
   * is recorded (close): a follower that reads the end finds the run finished, so the thread's next
   * run is not refused as busy. A run let go otherwise ends its followers' streams by its status.
   */
  private ending: RunEventInput | undefined;
  /** Another worker holds the run now: nothing more is written from here. */
  private lost = false;
  private closed = false;

  constructor(
    private readonly store: Pick<RunEventLog, "appendRunEvents">,
    private readonly run: ObservedRun,
  ) {}

  observe(): this {
    const { actor, agent, machine, resumed } = this.run;
    translateRunEvents(actor, { agent, machine, restored: resumed, append: (event) => this.add(event) });
    return this;
  }

  private add(event: RunEvent): void {
    if (this.lost) return;
    if (event.type === "run.finished" || event.type === "run.error") {
      this.ending = event;
      return;
    }
    const delta = event.type === "text.delta";
    if (delta && (this.written + this.buffer.length >= MAX_EVENTS_PER_CLAIM || this.buffer.length >= MAX_BUFFERED)) return;
    const last = this.buffer[this.buffer.length - 1];
    // Consecutive deltas of one batch travel as one.
    if (delta && last?.type === "text.delta") (last.data as { delta: string }).delta += event.data.delta;
    else this.buffer.push(delta ? { type: event.type, data: { ...event.data } } : event);
    this.timer ??= setTimeout(() => void this.flush(), BATCH_MS);
  }

  /** Write what is buffered; resolves when everything appended so far is stored (or given up). */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.writing = this.writing.then(() => this.writeBatch());
    return this.writing;
  }

  close({ outputRecorded }: { outputRecorded: boolean }): void {
    this.closed = true;
    if (this.ending && outputRecorded) this.buffer.push(this.ending);
    this.ending = undefined;
    void this.flush();
  }

  private async writeBatch(): Promise<void> {
    if (this.buffer.length === 0 || this.lost) return;
    const batch = this.buffer;
    this.buffer = [];
    try {
      if (await this.store.appendRunEvents(this.run.runId, this.run.token, batch)) this.written += batch.length;
      else this.lost = true;
    } catch {
      // The store is away: keep the batch for the next write (the worker gives the run up if it stays away).
      // Once the worker has let the run go, what is left is given up with it.
      if (this.closed) return;
      this.buffer = [...batch, ...this.buffer];
      this.timer ??= setTimeout(() => void this.flush(), 100).unref();
    }
  }
}
