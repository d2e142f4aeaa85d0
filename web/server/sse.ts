import type { IdentifiedRunEvent } from "../protocol.js";

/**
 * Server-sent events framing. `data` is one line of JSON (JSON.stringify never emits a raw
 * newline), so every event is exactly `id`, `event`, `data` and a blank line.
 */
export function encodeEvent(event: IdentifiedRunEvent): string {
  return `id: ${event.id}\nevent: ${event.type}\ndata: ${JSON.stringify(event.data)}\n\n`;
}

/** Sent first: how long a browser's EventSource waits before reconnecting. */
export const RETRY_PREAMBLE = "retry: 1000\n\n";
/** A comment line that keeps proxies from closing an idle stream. */
export const HEARTBEAT = ": keep-alive\n\n";

export const SSE_HEADERS = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-store",
  // Proxies such as nginx would otherwise buffer the stream and deliver it at the end.
  "x-accel-buffering": "no",
} as const;
