import pg from "pg";
import type { QueueSignal } from "../run-store.js";

/**
 * One LISTEN connection per store, opened on the first subscriber and reopened with backoff when the
 * server goes away. Notifications only save a poll: a missed one is caught by the next poll.
 */
export class NotificationListener {
  private client: pg.Client | undefined;
  private readonly listeners = new Set<(signal: QueueSignal) => void>();
  private closed = false;
  private connecting = false;
  private backoff = 100;
  private retry: NodeJS.Timeout | undefined;
  /** When the current LISTEN session began: every notification since then reaches this process (undefined while there is none). */
  since: number | undefined;
  /** Settles when the first LISTEN session is up. */
  private readonly firstSession: Promise<void>;
  private firstSessionUp: () => void = () => undefined;

  constructor(
    private readonly config: pg.ClientConfig,
    private readonly channel: string,
  ) {
    this.firstSession = new Promise((resolve) => (this.firstSessionUp = resolve));
  }

  /** Resolves once a LISTEN session has been up (now or earlier), or after `withinMs`, whichever comes first. */
  async listening(withinMs: number): Promise<void> {
    if (this.since !== undefined || this.closed) return;
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<void>((resolve) => (timer = setTimeout(resolve, withinMs)));
    try {
      await Promise.race([this.firstSession, bound]);
    } finally {
      clearTimeout(timer);
    }
  }

  subscribe(listener: (signal: QueueSignal) => void): () => void {
    this.listeners.add(listener);
    void this.connect();
    return () => {
      this.listeners.delete(listener);
    };
  }

  private dispatch(payload: string | undefined): void {
    const signal = signalOf(payload);
    for (const listener of [...this.listeners]) listener(signal);
  }

  private async connect(): Promise<void> {
    if (this.closed || this.client || this.connecting) return;
    this.connecting = true;
    const client = new pg.Client({ ...this.config, application_name: "jianmu:listen" });
    const lost = () => {
      if (this.client !== client) return;
      this.client = undefined;
      this.since = undefined;
      client.end().catch(() => undefined);
      this.scheduleReconnect();
    };
    client.on("error", lost);
    client.on("end", lost);
    client.on("notification", (message) => this.dispatch(message.payload));
    try {
      await client.connect();
      await client.query(`LISTEN ${this.channel}`);
      if (this.closed) {
        await client.end().catch(() => undefined);
        return;
      }
      this.client = client;
      this.since = Date.now();
      this.firstSessionUp();
      this.backoff = 100;
      // Whatever happened while we were not listening: let everyone look once.
      this.dispatch(undefined);
    } catch {
      client.end().catch(() => undefined);
      this.scheduleReconnect();
    } finally {
      this.connecting = false;
    }
  }

  private scheduleReconnect(delayMs = this.backoff): void {
    if (this.closed || this.retry) return;
    this.retry = setTimeout(() => {
      this.retry = undefined;
      void this.connect();
    }, delayMs);
    this.retry.unref();
    this.backoff = Math.min(this.backoff * 2, 5_000);
  }

  /**
   * The server is out of connections and this store's statements wait for one: LISTEN is only a
   * shortcut (polling is the guarantee), so it gives its connection to the work for a while.
   */
  yieldConnection(forMs: number): void {
    const client = this.client;
    if (!client || this.closed) return;
    this.client = undefined;
    this.since = undefined;
    client.end().catch(() => undefined);
    this.scheduleReconnect(forMs);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retry) clearTimeout(this.retry);
    const client = this.client;
    this.client = undefined;
    this.since = undefined;
    await client?.end().catch(() => undefined);
  }
}

/** A notification's payload: `finished:<runId>` (then a newline and the output's JSON when it fits), `events:<runId>`, `runnable:<runId>`, or a bare `runnable` (older writers, or none). */
function signalOf(payload: string | undefined): QueueSignal {
  if (payload?.startsWith("finished:")) {
    const end = payload.indexOf("\n");
    if (end === -1) return { kind: "finished", runId: payload.slice("finished:".length) };
    return { kind: "finished", runId: payload.slice("finished:".length, end), output: payload.slice(end + 1) };
  }
  if (payload?.startsWith("events:")) return { kind: "events", runId: payload.slice("events:".length) };
  if (payload?.startsWith("runnable:")) return { kind: "runnable", runId: payload.slice("runnable:".length) };
  return { kind: "runnable" };
}

/** PostgreSQL refuses a NOTIFY payload of 8000 bytes or more. */
const MAX_PAYLOAD_BYTES = 7_999;

/**
 * The `finished` notification of a run: with its output when the whole fits in one payload, so every
 * process waiting for it has it without a read (a run id never holds a newline: PrintableIdSchema).
 */
export function finishedPayload(runId: string, output: unknown): string {
  const bare = `finished:${runId}`;
  // A UTF-8 character takes at most 3 bytes per UTF-16 unit: a text this short fits without counting.
  const text = JSON.stringify(output);
  const payload = `${bare}\n${text}`;
  return payload.length * 3 <= MAX_PAYLOAD_BYTES || Buffer.byteLength(payload) <= MAX_PAYLOAD_BYTES ? payload : bare;
}
