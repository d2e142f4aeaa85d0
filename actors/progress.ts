/** One progress event of an invoked actor, with when it happened (the agent's clock, epoch ms). */
export interface Progress<E> {
  at: number;
  event: E;
}

/**
 * How long an actor may hold progress before sending it to the agent: one frame of a UI, so a
 * watcher sees no lag.
 */
export const PROGRESS_WINDOW_MS = 16;

/**
 * Collects an actor's progress and sends it to the agent at most once per window, as one event.
 *
 * Why: every event the agent receives is a macrostep of the XState interpreter (a new snapshot,
 * every observer notified), tens of microseconds each, and progress comes in bursts: a model
 * call's start and end, a streamed reply's deltas, a fast tool's start and result, often within
 * the same millisecond. Sent one by one they cost more than the work they report. What is still
 * held when the actor finishes is not sent at all: it rides on the actor's result (`attachTo()`), and
 * the agent reports it before the result itself, so the order of events never changes.
 */
export class ProgressBatcher<E> {
  private held: Progress<E>[] = [];

  constructor(
    private readonly send: (progress: Progress<E>[]) => void,
    private readonly now: () => number,
  ) {}

  push(event: E): void {
    this.held.push({ at: this.now(), event });
    if (this.held.length === 1) waitForTick(this);
  }

  /** Send what is held now (before an actor fails: its error carries no progress). */
  flush(): void {
    const held = this.take();
    if (held.length > 0) this.send(held);
  }

  /** The actor's result with what is held riding on it (unchanged when nothing is held). */
  attachTo<T extends object>(result: T): T & { progress?: Progress<E>[] } {
    const held = this.take();
    // Object.assign, not a spread: results come in several shapes, and spreading one takes a slow
    // path in V8 (about 1 µs, on every step's result).
    return held.length > 0 ? Object.assign({}, result, { progress: held }) : result;
  }

  /** Hand over what is held. */
  private take(): Progress<E>[] {
    waiting.delete(this);
    const held = this.held;
    if (held.length > 0) this.held = [];
    return held;
  }
}

/*
 * One timer for every batcher of the process, not one per batch: a timer costs more than a
 * progress event that fits in a batch, and a thousand agents would otherwise keep a thousand.
 * A batcher that starts holding waits for the next tick, so for at most one window.
 */
const waiting = new Set<{ flush(): void }>();
let tick: ReturnType<typeof setTimeout> | undefined;

function waitForTick(batcher: { flush(): void }): void {
  waiting.add(batcher);
  if (tick !== undefined) return;
  tick = setTimeout(flushWaiting, PROGRESS_WINDOW_MS);
  // The timer never keeps a process alive: an actor that is still running does that itself.
  tick.unref();
}

function flushWaiting(): void {
  tick = undefined;
  const due = [...waiting];
  waiting.clear();
  for (const batcher of due) batcher.flush();
}
