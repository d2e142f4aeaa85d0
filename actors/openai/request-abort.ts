/**
 * The abort handle one SDK request gets, made fresh for it and dropped with it: the one-request
 * AbortController the rules ask for, minus the `AbortSignal`.
 *
 * Why not a real AbortController: in Node 20 reading `controller.signal` builds the signal (about
 * 5 µs) and the SDK's `addEventListener` on it costs about 3 µs more, some 10 µs per model call, a
 * third of all the client adds to a raw SDK call (bench/inproc.mjs). The SDK reads only `aborted`
 * and calls `addEventListener("abort", listener, { once: true })` on the signal it is given
 * (`makeRequest`, `fetchWithTimeout`); it hands `fetch` a signal of its own. So this is all it needs,
 * and the listener it never removes dies with the handle, which lives no longer than its request.
 * test/model-client/faults.test.ts ("timeouts", "cancellation") aborts real SDK requests with it,
 * waiting for the headers and mid-stream.
 */
export class RequestAbort {
  aborted = false;
  reason: unknown = undefined;
  /** Almost always exactly one listener (the SDK's), so no array until a second one comes. */
  private listener: (() => void) | undefined;
  private more: (() => void)[] | undefined;

  addEventListener(type: string, listener: () => void): void {
    if (type !== "abort") return;
    if (this.aborted) return;
    if (this.listener === undefined) this.listener = listener;
    else (this.more ??= []).push(listener);
  }

  removeEventListener(type: string, listener: () => void): void {
    if (type !== "abort") return;
    if (this.listener === listener) this.listener = undefined;
    else if (this.more) this.more = this.more.filter((l) => l !== listener);
  }

  /** Runs each listener once, as `{ once: true }` asks; later calls do nothing. */
  abort(reason?: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    const first = this.listener;
    const more = this.more;
    this.listener = undefined;
    this.more = undefined;
    first?.();
    if (more) for (const listener of more) listener();
  }

  /** What the SDK's request options type it as. */
  asSignal(): AbortSignal {
    return this as unknown as AbortSignal;
  }
}
