/** One server-sent event as read off the wire. */
export interface SseMessage {
  id: string | undefined;
  event: string;
  data: string;
}

/**
 * Parse a text/event-stream body (the WHATWG rules: lines end in \n, \r\n or \r; `data` lines
 * join with \n; a blank line dispatches; comments and `retry` are skipped). Works on any
 * ReadableStream, so it reads the stream of a POST (which EventSource cannot send).
 */
export async function* readSse(body: ReadableStream<Uint8Array>): AsyncGenerator<SseMessage> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let id: string | undefined;
  let event = "";
  let data: string[] = [];
  try {
    for (;;) {
      const { done, value } = await reader.read();
      buffer += done ? decoder.decode() : decoder.decode(value, { stream: true });
      for (;;) {
        const end = buffer.search(/\r\n|\r|\n/);
        // A lone \r at the end may be the first half of \r\n: wait for more.
        if (end < 0 || (buffer[end] === "\r" && end === buffer.length - 1 && !done)) break;
        const line = buffer.slice(0, end);
        buffer = buffer.slice(end + (buffer.startsWith("\r\n", end) ? 2 : 1));
        if (line === "") {
          if (data.length > 0) yield { id, event: event || "message", data: data.join("\n") };
          event = "";
          data = [];
          continue;
        }
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        const text = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "data") data.push(text);
        else if (field === "event") event = text;
        else if (field === "id" && !text.includes("\0")) id = text;
      }
      if (done) return;
    }
  } finally {
    reader.releaseLock();
  }
}
