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

export interface ProgressBatcherOptions<E> {
  /**
   * Events a watcher can learn of a window late (the model call's own start and end): they do not
   * open a burst. The first event of a burst that is not one of them goes at the end of the task;
   * these wait for that, for the window's tick, or for the result. Default: none can wait.
   */
  canWait?: (event: E) => boolean;
}

/**
 * Collects an actor's progress and sends it to the agent in bursts: the first event of a burst at
 * the end of the current task (its callback and the microtasks it started), what follows within
 * the window at the window's tick (at most one event per window), as one event each time.
 *
 * Why: every event the agent receives is a macrostep of the XState interpreter (a new snapshot,
 * every observer notified), tens of microseconds each, and progress comes in bursts: a model
 * call's start and end, a streamed reply's deltas, a fast tool's start and result, often within
 * the same millisecond. Sent one by one they cost more than the work they report. But a reader
 * waits for the first token of a reply: held for a whole window it would arrive a frame late. At the
 * end of the task it arrives as soon as the bytes that carried it have been read, and whatever else
 * those bytes carried goes with it, so a reply or a tool that finishes within the task sends
 * nothing early at all. What is still held when the actor finishes is not sent: it rides on the
 * actor's result (`attachTo()`), and the agent reports it before the result itself, so the order
 * of events never changes, nor their timestamps, taken when each was pushed.
 */
export class ProgressBatcher<E> {
  private held: Progress<E>[] = [];
  /** A burst is on (an event that could not wait went out this window): what comes next waits for the tick. */
  private windowOpen = false;
  private readonly canWait: (event: E) => boolean;

  constructor(
    private readonly send: (progress: Progress<E>[]) => void,
    private readonly now: () => number,
    options: ProgressBatcherOptions<E> = {},
  ) {
    this.canWait = options.canWait ?? never;
  }

  push(event: E): void {
    this.held.push({ at: this.now(), event });
    if (dueNow.has(this)) return;
    if (!this.windowOpen && !this.canWait(event)) sendAtEndOfTask(this);
    else if (!waiting.has(this)) waitForTick(this);
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

  /**
   * The end of the task or the window's tick came: send what is held. If that holds an event that
   * could not wait, the burst goes on: the window stays open for another tick. Otherwise the burst
   * is over (or never began: a call's start sent alone at a tick opens none, or the reply's first
   * text after it would wait a window), and the next event that cannot wait opens a new one.
   */
  sendHeld(): void {
    const held = this.take();
    this.windowOpen = held.some(({ event }) => !this.canWait(event));
    if (this.windowOpen) waitForTick(this);
    if (held.length > 0) this.send(held);
  }

  /** Hand over what is held. */
  private take(): Progress<E>[] {
    dueNow.delete(this);
    waiting.delete(this);
    const held = this.held;
    if (held.length > 0) this.held = [];
    return held;
  }
}

const never = () => false;

interface Batcher {
  sendHeld(): void;
}

/*
 * One timer and one end-of-task callback for every batcher of the process, not one per batch: a
 * timer costs more than a progress event that fits in a batch, and a thousand agents would
 * otherwise keep a thousand. A batcher that waits for the tick waits for at most one window.
 * The tick keeps no process alive (an actor that is still running does that itself).
 */
const dueNow = new Set<Batcher>();
const waiting = new Set<Batcher>();
let endOfTask: unknown;
let tick: ReturnType<typeof setTimeout> | undefined;

/**
 * When the task that read the bytes is done: after its callback and every microtask it started,
 * before the event loop takes the next task. In Node, a tick queued from a microtask runs once the
 * microtask queue is empty. Not later: at the turn's boundary Node runs V8's own tasks (a scavenge
 * it scheduled, a marking step), which put milliseconds between a reply's first bytes and its
 * first token in about one run in a hundred. Elsewhere (a browser), a zero timer.
 */
const atEndOfTask: (callback: () => void) => unknown =
  typeof process !== "undefined" && typeof process.nextTick === "function"
    ? (callback) => process.nextTick(callback)
    : (callback) => setTimeout(callback, 0);

function sendAtEndOfTask(batcher: Batcher): void {
  dueNow.add(batcher);
  if (endOfTask !== undefined) return;
  endOfTask = atEndOfTask(sendDueNow);
}

function waitForTick(batcher: Batcher): void {
  waiting.add(batcher);
  if (tick !== undefined) return;
  tick = setTimeout(sendWaiting, PROGRESS_WINDOW_MS);
  tick.unref();
}

function sendDueNow(): void {
  endOfTask = undefined;
  sendAll(dueNow);
}

function sendWaiting(): void {
  tick = undefined;
  sendAll(waiting);
}

/** Each batcher of the set sends what it holds; those that send join the set for the next tick again. */
function sendAll(set: Set<Batcher>): void {
  const due = [...set];
  set.clear();
  for (const batcher of due) batcher.sendHeld();
}
