import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from "node:http";
import { setMaxListeners } from "node:events";
import type { AddressInfo, Socket } from "node:net";

/*
 * A real OpenAI-compatible HTTP server on 127.0.0.1, for tests, the offline demo and benchmarks.
 * It does not know the API: a `respond` function decides every reply, from recordings or by
 * hand, and faults (dropped sockets, hangs, slow streams) are replies like any other.
 */

/** A JSON body (a completion or an `{"error": ...}` body) with a status. */
export interface JsonReply {
  kind: "json";
  status?: number;
  headers?: Record<string, string>;
  body: unknown;
}

/** Any other body as is (an HTML error page from a proxy, plain text...). */
export interface TextReply {
  kind: "text";
  status?: number;
  headers?: Record<string, string>;
  body: string;
}

/** What to do once a cut-short stream has sent its part. */
export type CutAction = "destroy" | "hang" | "end";

/** A raw Server-Sent-Events body (`data: ...\n\n` ... `data: [DONE]\n\n`). */
export interface SseReply {
  kind: "sse";
  status?: number;
  headers?: Record<string, string>;
  body: string;
  /**
   * Send event by event with this pause between them; without it the body goes in one write. A
   * function gives the pause before each event (its index from 0; the first is never paused):
   * events it gives no pause go out in one write with the event before them, so a stream can send
   * its first delta, pause, and send the rest at once.
   */
  delayMs?: number | ((event: number) => number);
  /**
   * Send only the first `afterEvents` events or `afterBytes` bytes, then destroy the socket
   * (a dropped connection), hang (a stalled stream) or end the body cleanly (a truncated stream).
   */
  cut?: { afterEvents?: number; afterBytes?: number; then: CutAction };
}

/** Destroy the socket before sending a single byte. */
export interface DestroyReply {
  kind: "destroy";
}

/** Never answer (until the client gives up or the server is closed). */
export interface HangReply {
  kind: "hang";
}

export type Reply = JsonReply | TextReply | SseReply | DestroyReply | HangReply;

/** One request as the server received it. */
export interface ReceivedRequest {
  /** 0-based position among all requests this server received. */
  index: number;
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The parsed JSON body, or the raw text when it is not JSON. */
  body: unknown;
  rawBody: string;
  /** `performance.now()` when the body had been read. */
  receivedAt: number;
}

/**
 * How a request's connection ended: the reply was sent in full, the client hung up first, the
 * server dropped it on purpose (a `destroy` fault), or `close()` cut it.
 */
export type RequestOutcome = "completed" | "client-closed" | "destroyed" | "server-closed";

export type Respond = (request: ReceivedRequest) => Reply | Promise<Reply>;

export interface OpenAIServerOptions {
  respond: Respond;
  /** Default 0: any free port. */
  port?: number;
  /**
   * Keep every request and its outcome (default true, for tests to inspect). A long-running server
   * (`jianmu serve`) passes false, so its memory does not grow with each request.
   */
  keepRequests?: boolean;
}

export interface OpenAIServer {
  /** `http://127.0.0.1:<port>/v1`, ready for `new OpenAI({ baseURL })`. */
  readonly baseURL: string;
  /** Every request received, in the order their bodies were read. */
  readonly requests: readonly ReceivedRequest[];
  /** Resolves when request `index` has ended, saying how. */
  outcome(index: number): Promise<RequestOutcome>;
  /**
   * Closes every kept-alive connection with no request in flight (Node's
   * `server.closeIdleConnections()`); the clients' pools drop them once they see the close.
   */
  closeIdleConnections(): void;
  /** Stops listening and destroys every open socket, hanging replies included. */
  close(): Promise<void>;
}

export async function startOpenAIServer(options: OpenAIServerOptions): Promise<OpenAIServer> {
  const requests: ReceivedRequest[] = [];
  const outcomes: Promise<RequestOutcome>[] = [];
  const sockets = new Set<Socket>();
  const closing = new AbortController();
  // Each stream paused between events listens on it until its pause ends: many concurrent
  // streams are normal here, not a leak, so Node's default limit of 10 must not warn.
  setMaxListeners(0, closing.signal);

  let received = 0;
  const keep = options.keepRequests ?? true;
  const server = createServer((req, res) => {
    const index = received++;
    let settle!: (outcome: RequestOutcome) => void;
    const outcome = new Promise<RequestOutcome>((resolve) => (settle = resolve));
    if (keep) outcomes[index] = outcome;
    const state = { destroyedByUs: false };
    res.on("close", () => {
      if (res.writableFinished) settle("completed");
      else if (state.destroyedByUs) settle("destroyed");
      else if (closing.signal.aborted) settle("server-closed");
      else settle("client-closed");
    });
    void handle(req, res, index, state).catch(() => {
      // The socket is gone mid-write; its outcome is already recorded by the close handler.
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse, index: number, state: { destroyedByUs: boolean }) {
    const rawBody = await readBody(req);
    const request: ReceivedRequest = {
      index,
      method: req.method ?? "GET",
      path: req.url ?? "/",
      headers: req.headers,
      body: parseBody(rawBody),
      rawBody,
      receivedAt: performance.now(),
    };
    if (keep) requests.push(request);
    let reply: Reply;
    try {
      reply = await options.respond(request);
    } catch (error) {
      // A broken `respond` should be visible in the test, not look like a network fault.
      reply = replies.error(500, `test server: respond() threw: ${error instanceof Error ? error.message : String(error)}`);
    }
    const destroy = () => {
      state.destroyedByUs = true;
      res.socket?.destroy();
      res.destroy();
    };
    switch (reply.kind) {
      case "destroy":
        return destroy();
      case "hang":
        return;
      case "json": {
        const text = JSON.stringify(reply.body);
        res.writeHead(reply.status ?? 200, { "content-type": "application/json", ...reply.headers });
        return void res.end(text);
      }
      case "text":
        res.writeHead(reply.status ?? 200, { "content-type": "text/plain; charset=utf-8", ...reply.headers });
        return void res.end(reply.body);
      case "sse":
        return writeSse(res, reply, destroy);
    }
  }

  async function writeSse(res: ServerResponse, reply: SseReply, destroy: () => void) {
    res.writeHead(reply.status ?? 200, { "content-type": "text/event-stream", "cache-control": "no-cache", ...reply.headers });
    res.flushHeaders();
    let pieces: (string | Buffer)[] = reply.delayMs !== undefined || reply.cut?.afterEvents !== undefined ? splitEvents(reply.body) : [reply.body];
    if (reply.cut?.afterEvents !== undefined) pieces = pieces.slice(0, reply.cut.afterEvents);
    if (reply.cut?.afterBytes !== undefined) pieces = takeBytes(pieces, reply.cut.afterBytes);
    for (const { piece, delay } of paced(pieces, reply.delayMs)) {
      if (res.destroyed) return;
      if (delay > 0) await pause(delay, closing.signal);
      if (res.destroyed || closing.signal.aborted) return;
      res.write(piece);
    }
    if (!reply.cut) return void res.end();
    // Let the written bytes reach the client before the socket goes, or it may see nothing at all.
    await pause(20, closing.signal);
    if (reply.cut.then === "destroy") destroy();
    else if (reply.cut.then === "end") res.end();
  }

  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    requests,
    outcome(index) {
      const outcome = outcomes[index];
      if (!outcome) return Promise.reject(new Error(`the server has not received request ${index} (it has ${requests.length})`));
      return outcome;
    },
    closeIdleConnections() {
      server.closeIdleConnections();
    },
    close() {
      closing.abort();
      for (const socket of sockets) socket.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Builders for the replies tests use most. */
export const replies = {
  json(body: unknown, status = 200, headers?: Record<string, string>): JsonReply {
    return headers ? { kind: "json", status, headers, body } : { kind: "json", status, body };
  },
  /** An OpenAI-style error body: `{"error": {message, type, code}}`. */
  error(status: number, message: string, details: { code?: string; type?: string; headers?: Record<string, string> } = {}): JsonReply {
    const error: Record<string, unknown> = { message, type: details.type ?? (status >= 500 ? "server_error" : "invalid_request_error") };
    if (details.code !== undefined) error["code"] = details.code;
    return replies.json({ error }, status, details.headers);
  },
  /** HTTP 429 with `retry-after` (seconds) or `retry-after-ms`. */
  rateLimited(wait: { seconds?: number; ms?: number } = {}): JsonReply {
    const headers: Record<string, string> = {};
    if (wait.seconds !== undefined) headers["retry-after"] = String(wait.seconds);
    if (wait.ms !== undefined) headers["retry-after-ms"] = String(wait.ms);
    return replies.error(429, "Rate limit reached for requests", { code: "rate_limit_exceeded", type: "requests", headers });
  },
  sse(body: string, options: Omit<SseReply, "kind" | "body"> = {}): SseReply {
    return { kind: "sse", body, ...options };
  },
  /** An SSE body from chunk objects: one `data:` event each, then `data: [DONE]`. */
  sseFromChunks(chunks: readonly unknown[], options: Omit<SseReply, "kind" | "body"> = {}): SseReply {
    return replies.sse(toSse(chunks), options);
  },
  destroy(): DestroyReply {
    return { kind: "destroy" };
  },
  hang(): HangReply {
    return { kind: "hang" };
  },
};

/** Chunk objects as an SSE body ending in `data: [DONE]`. */
export function toSse(chunks: readonly unknown[]): string {
  return chunks.map((chunk) => `data: ${typeof chunk === "string" ? chunk : JSON.stringify(chunk)}\n\n`).join("") + "data: [DONE]\n\n";
}

/** Cuts an SSE body after each blank line, keeping the separators (so pieces re-join exactly). */
export function splitEvents(body: string): string[] {
  return body.split(/(?<=\r?\n\r?\n)/).filter((piece) => piece !== "");
}

/** The first `limit` bytes of the pieces, cut mid-piece (even mid-character) like a real drop. */
/** The writes of a stream and the pause before each: every piece after a pause, or runs of unpaused events in one write. */
function paced(pieces: readonly (string | Buffer)[], delayMs: SseReply["delayMs"]): { piece: string | Buffer; delay: number }[] {
  if (typeof delayMs !== "function") return pieces.map((piece, i) => ({ piece, delay: i > 0 ? (delayMs ?? 0) : 0 }));
  const writes: { piece: string | Buffer; delay: number }[] = [];
  pieces.forEach((piece, i) => {
    const delay = i > 0 ? delayMs(i) : 0;
    const last = writes.at(-1);
    if (last !== undefined && delay <= 0) last.piece = Buffer.concat([Buffer.from(last.piece), Buffer.from(piece)]);
    else writes.push({ piece, delay });
  });
  return writes;
}

function takeBytes(pieces: readonly (string | Buffer)[], limit: number): Buffer[] {
  const out: Buffer[] = [];
  let left = limit;
  for (const piece of pieces) {
    if (left <= 0) break;
    const bytes = Buffer.from(piece);
    out.push(bytes.length <= left ? bytes : bytes.subarray(0, left));
    left -= bytes.length;
  }
  return out;
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    req.on("data", (part: Buffer) => parts.push(part));
    req.on("end", () => resolve(Buffer.concat(parts).toString("utf8")));
    req.on("error", reject);
  });
}

function parseBody(raw: string): unknown {
  if (raw === "") return undefined;
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}
