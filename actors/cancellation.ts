/**
 * How an invoked step (and the model call it makes) learns that it was stopped, without paying for
 * an AbortSignal nobody needs. In Node 20 an AbortSignal is a transferable EventTarget: making one
 * costs about 4 µs, and adding and removing a listener about 2 µs more, on every round of every run,
 * while most steps never hand a signal to anything. So a step's AbortController is made only when
 * `signal` is first read (or when the step is stopped); asking `aborted` or registering `onAbort`
 * makes none. It is still one controller per request, released with it.
 */
export interface Cancellation {
  /** Whether the step was stopped. */
  readonly aborted: boolean;
  /** Why (the signal's reason); undefined while not stopped. */
  readonly reason: unknown;
  /** The same cancellation as an AbortSignal, for APIs that need one (made on first read, already aborted if the step was stopped). */
  readonly signal: AbortSignal;
  /** Calls `listener` once when the step is stopped (never if it already was: check `aborted`); returns what removes it. */
  onAbort(listener: () => void): () => void;
}

/** The cancellation `fromReportingPromise` hands its creator: stopped by `abort()`. */
export class LazyCancellation implements Cancellation {
  private controller: AbortController | undefined;
  private listeners: Set<() => void> | undefined;
  private stopped = false;

  get aborted(): boolean {
    return this.stopped;
  }

  get reason(): unknown {
    return this.stopped ? this.signal.reason : undefined;
  }

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.stopped) this.controller.abort();
    }
    return this.controller.signal;
  }

  onAbort(listener: () => void): () => void {
    if (this.stopped) return () => undefined;
    (this.listeners ??= new Set()).add(listener);
    return () => this.listeners?.delete(listener);
  }

  /** Stop the step: the signal (made now if it was not) aborts first, then each listener runs. */
  abort(): void {
    if (this.stopped) return;
    this.stopped = true;
    (this.controller ??= new AbortController()).abort();
    const listeners = this.listeners;
    this.listeners = undefined;
    if (listeners) for (const listener of listeners) listener();
  }
}

/** A caller's AbortSignal seen as a cancellation (its listener is removed by what `onAbort` returns). */
export function cancellationOf(signal: AbortSignal): Cancellation {
  return {
    get aborted() {
      return signal.aborted;
    },
    get reason() {
      return signal.reason as unknown;
    },
    signal,
    onAbort(listener) {
      signal.addEventListener("abort", listener, { once: true });
      return () => signal.removeEventListener("abort", listener);
    },
  };
}
