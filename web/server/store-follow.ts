import type { RunStore } from "../../queue/run-store.js";
import { FINAL_STATUSES } from "../../queue/schemas.js";
import type { StoredRunEvent } from "../../queue/run-events.js";
import { parseRunEvent, type IdentifiedRunEvent } from "../protocol.js";

/** Events read per statement; a full page is followed by the next at once. */
const PAGE = 500;
/** While a followed run writes nothing, its status is looked at this often (its events may be pruned, its worker gone). */
const STATUS_EVERY_MS = 1_000;

interface Follower {
  cursor: number;
  send: (event: IdentifiedRunEvent) => void;
  end: () => void;
}

interface Channel {
  runId: string;
  followers: Set<Follower>;
  reading: boolean;
  again: boolean;
  lastStatusCheck: number;
  /** The last status check found the run ended with no end event read: the next one settles it. */
  endedUntold: boolean;
}

export interface StoreFollowersOptions {
  store: RunStore;
  /** How often followed runs are read when no notification came (PostgreSQL notifies; SQLite does not between processes). */
  pollMs: number;
  /** The last event of a run that ended without telling its followers (events pruned, or its end not written): a snapshot. */
  settled: (runId: string) => Promise<IdentifiedRunEvent>;
  onError: (error: Error) => void;
}

/**
 * Every stream this process serves from a run store, together: one reader per followed run however
 * many pages follow it, woken by the store's `events` notification and by one shared poll timer.
 * Each follower keeps its own cursor, so it gets each event after the one it saw last exactly once.
 */
export class StoreFollowers {
  private readonly channels = new Map<string, Channel>();
  private timer: NodeJS.Timeout | undefined;
  private unsubscribe: (() => void) | undefined;

  constructor(private readonly options: StoreFollowersOptions) {}

  /** Follow the run's events after `afterSeq` until it ends; returns the unfollow. */
  follow(runId: string, afterSeq: number, send: Follower["send"], end: Follower["end"]): () => void {
    let channel = this.channels.get(runId);
    if (!channel) {
      channel = { runId, followers: new Set(), reading: false, again: false, lastStatusCheck: 0, endedUntold: false };
      this.channels.set(runId, channel);
    }
    const follower: Follower = { cursor: afterSeq, send, end };
    channel.followers.add(follower);
    this.listen();
    void this.read(channel);
    return () => this.drop(channel, follower);
  }

  /** Followed runs now (for tests and metrics). */
  get runs(): number {
    return this.channels.size;
  }

  /** Followers of all runs now. */
  get followers(): number {
    let count = 0;
    for (const channel of this.channels.values()) count += channel.followers.size;
    return count;
  }

  /** Whether the poll timer and the store subscription are on (only while some run is followed). */
  get listening(): boolean {
    return this.unsubscribe !== undefined;
  }

  close(): void {
    for (const channel of this.channels.values()) for (const follower of [...channel.followers]) this.finish(channel, follower);
    this.stopListening();
  }

  private listen(): void {
    if (this.unsubscribe) return;
    this.unsubscribe = this.options.store.subscribe((signal) => {
      if (signal.kind === "runnable") return;
      // Another process wrote, what is not known (SQLite): every followed run may have new events.
      if (signal.kind === "changed") return this.readAll();
      const channel = this.channels.get(signal.runId);
      if (channel) void this.read(channel);
    });
    this.timer = setInterval(() => this.readAll(), this.options.pollMs);
    this.timer.unref();
  }

  private readAll(): void {
    for (const channel of this.channels.values()) void this.read(channel);
  }

  private stopListening(): void {
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  private drop(channel: Channel, follower: Follower): void {
    channel.followers.delete(follower);
    if (channel.followers.size === 0 && this.channels.get(channel.runId) === channel) this.channels.delete(channel.runId);
    if (this.channels.size === 0) this.stopListening();
  }

  private finish(channel: Channel, follower: Follower): void {
    this.drop(channel, follower);
    follower.end();
  }

  /** Read from the lowest cursor and hand each follower what is new to it; one read per run at a time. */
  private async read(channel: Channel): Promise<void> {
    if (channel.reading) {
      channel.again = true;
      return;
    }
    channel.reading = true;
    try {
      do {
        channel.again = false;
        if (channel.followers.size === 0) return;
        const from = Math.min(...[...channel.followers].map((f) => f.cursor));
        const rows = await this.options.store.runEventsAfter(channel.runId, from, PAGE);
        for (const row of rows) this.deliver(channel, row);
        if (rows.length === PAGE) channel.again = true;
        else if (rows.length === 0) await this.checkSettled(channel);
      } while (channel.again);
    } catch (error) {
      // The store is away: the next notification or poll reads again.
      this.options.onError(error instanceof Error ? error : new Error(String(error)));
    } finally {
      channel.reading = false;
    }
  }

  private deliver(channel: Channel, row: StoredRunEvent): void {
    const event = toIdentified(row);
    const last = row.type === "run.finished" || row.type === "run.error";
    for (const follower of [...channel.followers]) {
      if (row.seq <= follower.cursor) continue;
      follower.cursor = row.seq;
      if (event) follower.send(event);
      if (last) this.finish(channel, follower);
    }
  }

  /** Nothing new: when the run has ended anyway, its followers get a last snapshot and the stream ends. */
  private async checkSettled(channel: Channel): Promise<void> {
    const now = Date.now();
    if (now - channel.lastStatusCheck < STATUS_EVERY_MS) return;
    channel.lastStatusCheck = now;
    const { status } = await this.options.store.status(channel.runId);
    if (!FINAL_STATUSES.includes(status)) return;
    // Written between the read and the status: read once more before calling it settled.
    const late = await this.options.store.runEventsAfter(channel.runId, Math.min(...[...channel.followers].map((f) => f.cursor)), PAGE);
    for (const row of late) this.deliver(channel, row);
    if (channel.followers.size === 0) return;
    // A worker writes a run's end event just after its output: one status check later it is there, or never will be.
    if (!channel.endedUntold) {
      channel.endedUntold = true;
      return;
    }
    const snapshot = await this.options.settled(channel.runId);
    for (const follower of [...channel.followers]) {
      follower.send(snapshot);
      this.finish(channel, follower);
    }
  }
}

function toIdentified(row: StoredRunEvent): IdentifiedRunEvent | undefined {
  try {
    const event = parseRunEvent(row.type, row.data);
    return event ? ({ ...event, id: String(row.seq) } as IdentifiedRunEvent) : undefined;
  } catch {
    // Written by a newer or older version with another shape: skipped, like an unknown type.
    return undefined;
  }
}
