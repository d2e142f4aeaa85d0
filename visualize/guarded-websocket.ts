import type { StatelyInspectionEvent } from "@statelyai/inspect";
import { JianmuError } from "../tools/jianmu-error.js";

/**
 * @statelyai/inspect 0.7.2's WebSocket adapter retries a failed connection forever: its socket's
 * `onerror` waits 5 s on a plain `setTimeout` and calls `start()` again, and `stop()` neither
 * clears that timer nor stops the next attempt. A Node process whose inspector cannot connect
 * (no inspector server running) therefore never exits. This wrapper takes the retry over: right
 * after every connection attempt it replaces the socket's `onerror` (before any I/O can fire it)
 * with one that retries on an unref'd timer, which `stop()` clears. It also makes sure a socket
 * whose close handshake is not answered is terminated instead of holding the process for 30 s,
 * and that `stop()` during connecting lets the socket open and deliver what it holds (within
 * `flushMs`) instead of dropping a short run's events.
 */

/** The adapter's fields this wrapper relies on (private in the package's types). */
interface SocketLike {
  onerror: ((event: unknown) => void) | null;
  onopen: ((event: unknown) => void) | null;
  close(): void;
  terminate?: () => void;
  readyState?: number;
}
interface WebSocketAdapterInternals {
  ws?: SocketLike;
  status: string;
  start(): void;
  stop(): void;
  send(event: StatelyInspectionEvent): void;
}

const CONNECTING = 0;
const CLOSED = 3;

export class InspectorAdapterError extends JianmuError {
  static override readonly errorCode = "INSPECTOR_ADAPTER_ERROR";
  override name = "InspectorAdapterError";
}

export class GuardedWebSocketAdapter {
  private readonly inner: WebSocketAdapterInternals;
  private readonly retryMs: number | false;
  private readonly flushMs: number;
  private retryTimer: ReturnType<typeof setTimeout> | undefined;
  private flushTimer: ReturnType<typeof setTimeout> | undefined;
  private stopped = false;
  private closed = false;

  /** `adapter` is `createWebSocketInspector({ autoStart: false, ... }).adapter`. */
  constructor(adapter: object, retryMs: number | false, flushMs = 2000) {
    if (!("start" in adapter) || !("stop" in adapter) || !("send" in adapter)) {
      throw new InspectorAdapterError("the @statelyai/inspect WebSocket adapter does not have start/stop/send; this guard was written for 0.7.2");
    }
    this.inner = adapter as unknown as WebSocketAdapterInternals;
    this.retryMs = retryMs;
    this.flushMs = flushMs;
  }

  get isStopped(): boolean {
    return this.stopped;
  }

  start(): void {
    if (this.stopped) return;
    this.inner.start();
    const socket = this.inner.ws;
    if (!socket || typeof socket !== "object" || !("onerror" in socket)) {
      this.inner.stop();
      throw new InspectorAdapterError("the @statelyai/inspect WebSocket adapter kept no socket to guard; this guard was written for 0.7.2");
    }
    socket.onerror = () => {
      this.inner.status = "closed";
      this.scheduleRetry();
    };
  }

  private scheduleRetry(): void {
    if (this.stopped || this.retryMs === false || this.retryTimer) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.start();
    }, this.retryMs);
    // Retrying must never be the reason a finished program keeps running.
    this.retryTimer.unref?.();
  }

  send(event: StatelyInspectionEvent): void {
    this.inner.send(event);
  }

  /** Stop retrying and disconnect; a socket still connecting may first open and send what is held. */
  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    const socket = this.inner.ws;
    if (socket && socket.readyState === CONNECTING) {
      // The package's own onopen sends the deferred events; close right after it.
      const flush = socket.onopen;
      socket.onopen = (event) => {
        flush?.(event);
        this.close();
      };
      this.flushTimer = setTimeout(() => this.close(), this.flushMs);
      this.flushTimer.unref?.();
      return;
    }
    this.close();
  }

  private close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.flushTimer) clearTimeout(this.flushTimer);
    const socket = this.inner.ws;
    this.inner.stop();
    if (socket && typeof socket.terminate === "function" && socket.readyState !== CLOSED) {
      const terminate = socket.terminate.bind(socket);
      const timer = setTimeout(() => {
        if (socket.readyState !== CLOSED) terminate();
      }, 1000);
      timer.unref?.();
    }
  }
}
