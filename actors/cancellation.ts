/**
 * What an AbortSignal tells a model call, without necessarily being one: whether the step was
 * cancelled, and a way to hear of it.
 *
 * Why: in Node 20 building an AbortSignal costs about 5 µs and adding and removing a listener on
 * it 3-4 µs more, together as much as the rest of what the model client adds to a raw SDK call
 * (bench/inproc.mjs). A step's cancellation happens rarely and only ever needs a callback, so the
 * LLM step hands the model client one of these (`ModelCallOptions.cancellation`) and the real
 * signal is only built if something asks for it (a custom client reading `signal`, the wait
 * between retries).
 */
export interface Cancellation {
  readonly aborted: boolean;
  /** `listener` runs once, when the step is cancelled (never if it already was: check `aborted`). */
  addAbortListener(listener: () => void): void;
  removeAbortListener(listener: () => void): void;
  /** The same cancellation as a real AbortSignal, for APIs that need one. */
  readonly signal: AbortSignal;
}

/**
 * One step's cancellation: one per step, aborted at most once, dropped with the step (so, like the
 * step's AbortController it replaces, it never outlives the request). A step has one listener at
 * a time (the current attempt's), so that one has its own slot and only more go in an array.
 */
export class StepCancellation implements Cancellation {
  private isAborted = false;
  private listener: (() => void) | undefined;
  private more: (() => void)[] | undefined;
  private controller: AbortController | undefined;

  get aborted(): boolean {
    return this.isAborted;
  }

  get signal(): AbortSignal {
    if (this.controller === undefined) {
      this.controller = new AbortController();
      if (this.isAborted) this.controller.abort();
    }
    return this.controller.signal;
  }

  addAbortListener(listener: () => void): void {
    if (this.isAborted) return;
    if (this.listener === undefined) this.listener = listener;
    else (this.more ??= []).push(listener);
  }

  removeAbortListener(listener: () => void): void {
    if (this.listener === listener) this.listener = undefined;
    else if (this.more !== undefined) {
      const index = this.more.indexOf(listener);
      if (index !== -1) this.more.splice(index, 1);
    }
  }

  abort(): void {
    if (this.isAborted) return;
    this.isAborted = true;
    const first = this.listener;
    const more = this.more;
    this.listener = undefined;
    this.more = undefined;
    // The real signal first, as before (its listeners were the step's only ones).
    this.controller?.abort();
    first?.();
    if (more !== undefined) for (const listener of more) listener();
  }
}

/** A caller's AbortSignal seen as a `Cancellation` (a listener on it is removed when the call ends). */
export function signalCancellation(signal: AbortSignal): Cancellation {
  return {
    get aborted() {
      return signal.aborted;
    },
    addAbortListener: (listener) => signal.addEventListener("abort", listener, { once: true }),
    removeAbortListener: (listener) => signal.removeEventListener("abort", listener),
    signal,
  };
}
