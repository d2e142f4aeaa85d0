import { ErrorBodySchema, parseRunEvent, ThreadViewSchema, type RunCommand, type RunEvent, type ThreadView } from "../protocol.js";
import { readSse } from "./sse-reader.js";
import type { PartsContent } from "../../actors/messages.js";
import { JianmuError } from "../../tools/jianmu-error.js";

export type FetchLike = (input: string, init?: RequestInit) => Promise<Response>;

/** Where a stream starts: a new run (`POST /runs`) or an existing one (`GET /runs/:id/stream`). */
export type StreamRequest =
  | { kind: "start"; url: string; agent: string; message: PartsContent; threadId?: string | undefined; fetch: FetchLike }
  | { kind: "follow"; url: string; runId: string; lastEventId: string | undefined; fetch: FetchLike };

/** How a stream ended, when it did not end with the run. */
export class StreamError extends JianmuError {
  static override readonly errorCode = "STREAM_ERROR";
  override name = "StreamError";
  constructor(
    message: string,
    /** true for a refusal (4xx): asking again gives the same answer. */
    readonly final: boolean,
  ) {
    super(message);
  }
}

/** The error message of a JSON error body, or the status line. */
export async function problemOf(response: Response): Promise<string> {
  const text = await response.text().catch(() => "");
  try {
    const parsed = ErrorBodySchema.safeParse(JSON.parse(text));
    if (parsed.success) return parsed.data.error.message;
  } catch {
    // not JSON: fall through to the status
  }
  return `HTTP ${response.status}${text ? `: ${text.slice(0, 200)}` : ""}`;
}

/**
 * Open a run's event stream and hand each checked event to `onEvent` until the stream ends.
 * Resolves when the server closes it; rejects with StreamError for a refusal or a lost connection.
 */
export async function openRunStream(request: StreamRequest, signal: AbortSignal, onEvent: (event: RunEvent, id: string | undefined) => void): Promise<void> {
  const base = request.url.replace(/\/+$/, "");
  let response: Response;
  try {
    response =
      request.kind === "start"
        ? await request.fetch(`${base}/runs`, {
            method: "POST",
            headers: { "content-type": "application/json", accept: "text/event-stream" },
            body: JSON.stringify({ agent: request.agent, message: request.message, ...(request.threadId !== undefined ? { threadId: request.threadId } : {}) }),
            signal,
          })
        : await request.fetch(`${base}/runs/${encodeURIComponent(request.runId)}/stream`, {
            headers: { accept: "text/event-stream", ...(request.lastEventId ? { "last-event-id": request.lastEventId } : {}) },
            signal,
          });
  } catch (error) {
    throw new StreamError(`cannot reach ${base}: ${error instanceof Error ? error.message : String(error)}`, false);
  }
  if (!response.ok || !response.body) {
    throw new StreamError(await problemOf(response), response.status >= 400 && response.status < 500);
  }
  try {
    for await (const message of readSse(response.body)) {
      const event = parseRunEvent(message.event, JSON.parse(message.data));
      if (event) onEvent(event, message.id);
    }
  } catch (error) {
    throw new StreamError(`the stream broke off: ${error instanceof Error ? error.message : String(error)}`, false);
  }
}

/** `POST /runs/:id/events`; rejects with the server's reason when it refuses. */
export async function sendRunCommand(fetchFn: FetchLike, url: string, runId: string, command: RunCommand, signal: AbortSignal): Promise<void> {
  const response = await fetchFn(`${url.replace(/\/+$/, "")}/runs/${encodeURIComponent(runId)}/events`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(command),
    signal,
  });
  if (!response.ok) throw new Error(await problemOf(response));
  await response.body?.cancel();
}

/**
 * `GET /threads/:threadId`: the thread's runs and the conversation its latest ended run left, checked
 * against the protocol's schema. Rejects with the server's reason (403, 404 `unknown_thread`).
 */
export async function readThread(options: { url: string; threadId: string; fetch?: FetchLike; signal?: AbortSignal }): Promise<ThreadView> {
  const fetchFn = options.fetch ?? ((url: string, init?: RequestInit) => globalThis.fetch(url, init));
  const response = await fetchFn(`${options.url.replace(/\/+$/, "")}/threads/${encodeURIComponent(options.threadId)}`, {
    headers: { accept: "application/json" },
    ...(options.signal ? { signal: options.signal } : {}),
  });
  if (!response.ok) throw new Error(await problemOf(response));
  return ThreadViewSchema.parse(await response.json());
}
