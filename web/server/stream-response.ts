import type { IdentifiedRunEvent } from "../protocol.js";
import { encodeEvent, HEARTBEAT, RETRY_PREAMBLE, SSE_HEADERS } from "./sse.js";

/** Where new events come from: a run held here (RunLog) or one read from a run store (store-follow.ts). */
export interface EventFeed {
  /** Call `listener` with each new event until the run ends, then `onClose`; returns the unfollow. */
  follow(listener: (event: IdentifiedRunEvent) => void, onClose: () => void): () => void;
}

/**
 * An SSE response: `backlog` first, then (with a log) every new event until the run ends. A
 * follower that goes away only stops following: the run goes on.
 */
export function streamResponse(backlog: readonly IdentifiedRunEvent[], log: EventFeed | undefined, heartbeatMs: number, headers: Record<string, string> = {}): Response {
  const encoder = new TextEncoder();
  let stop = (): void => undefined;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      let open = true;
      const send = (text: string) => {
        if (open) controller.enqueue(encoder.encode(text));
      };
      const end = () => {
        if (!open) return;
        open = false;
        stop();
        controller.close();
      };
      send(RETRY_PREAMBLE);
      for (const event of backlog) send(encodeEvent(event));
      if (!log) {
        end();
        return;
      }
      const timer = setInterval(() => send(HEARTBEAT), heartbeatMs);
      (timer as { unref?: () => void }).unref?.();
      let unfollow = (): void => undefined;
      stop = () => {
        clearInterval(timer);
        unfollow();
      };
      unfollow = log.follow((event) => send(encodeEvent(event)), end);
    },
    cancel() {
      stop();
    },
  });
  return new Response(body, { status: 200, headers: { ...SSE_HEADERS, ...headers } });
}
