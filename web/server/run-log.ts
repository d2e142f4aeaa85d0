import { randomUUID } from "node:crypto";
import type { IdentifiedRunEvent, RunEvent } from "../protocol.js";

type Listener = (event: IdentifiedRunEvent) => void;

/**
 * The events of one run as this process saw them, in order, each with an id
 * `<epoch>.<sequence>`. The epoch is new for every process that holds the run (a restored run
 * starts a new one), so a Last-Event-ID from before a restart is recognised as not replayable
 * and the follower gets a snapshot instead of a gap.
 */
export class RunLog {
  readonly epoch = randomUUID().slice(0, 8);
  private readonly events: IdentifiedRunEvent[] = [];
  private readonly listeners = new Set<Listener>();
  private closedFlag = false;
  /** When an event was last appended or a follower came or went (epoch ms). */
  lastActivity = Date.now();

  append(event: RunEvent): void {
    if (this.closedFlag) return;
    this.lastActivity = Date.now();
    const identified = { ...event, id: `${this.epoch}.${this.events.length + 1}` } as IdentifiedRunEvent;
    this.events.push(identified);
    for (const listener of [...this.listeners]) listener(identified);
  }

  /** No more events: the run ended. Followers are told by `onClose`. */
  close(): void {
    if (this.closedFlag) return;
    this.closedFlag = true;
    for (const listener of [...this.listeners]) this.listeners.delete(listener);
    for (const done of [...this.closers]) done();
    this.closers.clear();
  }

  get closed(): boolean {
    return this.closedFlag;
  }

  /** How many streams follow the log now. */
  get followers(): number {
    return this.listeners.size;
  }

  get lastId(): string | undefined {
    return this.events[this.events.length - 1]?.id;
  }

  /** Every event so far. */
  all(): readonly IdentifiedRunEvent[] {
    return this.events;
  }

  /** The events after `id`, or undefined when `id` is not one of this log's (another epoch, or made up). */
  after(id: string): readonly IdentifiedRunEvent[] | undefined {
    const [epoch, seq] = id.split(".");
    const n = Number(seq);
    if (epoch !== this.epoch || !Number.isInteger(n) || n < 0 || n > this.events.length) return undefined;
    return this.events.slice(n);
  }

  private readonly closers = new Set<() => void>();

  /** Follow new events until the log closes; returns the unsubscribe. */
  follow(listener: Listener, onClose: () => void): () => void {
    if (this.closedFlag) {
      onClose();
      return () => undefined;
    }
    this.listeners.add(listener);
    this.closers.add(onClose);
    this.lastActivity = Date.now();
    return () => {
      this.listeners.delete(listener);
      this.closers.delete(onClose);
      this.lastActivity = Date.now();
    };
  }
}
