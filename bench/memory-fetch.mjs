import { splitEvents } from "jianmu/testing";
import { replyFor } from "./replies.mjs";
import { parseTaskModel } from "./task.mjs";

/*
 * The bench server without the loopback: a `fetch` for the `openai` SDK (and the AI SDK's provider)
 * that answers every request from memory with the very bytes server.mjs sends. The SDKs still
 * build, send and parse every request; no socket, parser or server is involved. A paused task's
 * answer streams its first delta, then the rest after the pause, as the server does.
 */

const JSON_HEADERS = { "content-type": "application/json" };
const SSE_HEADERS = { "content-type": "text/event-stream" };
const encoder = new TextEncoder();

/** The base URL the SDKs are given when `memoryFetch` answers: no request ever leaves the process. */
export const MEMORY_BASE_URL = "http://memory.invalid/v1";

/** A contender's endpoint answered from memory: `model` names the task (task.mjs), as over loopback. */
export const memoryEndpoint = (model, stream) => ({ baseURL: MEMORY_BASE_URL, model, stream, fetch: memoryFetch });

export async function memoryFetch(_url, init) {
  const body = JSON.parse(init.body);
  const round = body.messages.filter((m) => m.role === "assistant").length;
  const task = parseTaskModel(body.model);
  const { reply, pauseBefore } = replyFor(task, body.model, round, body.stream === true);
  if (reply.kind === "json") return new Response(JSON.stringify(reply.body), { status: 200, headers: JSON_HEADERS });
  if (pauseBefore === undefined) return new Response(reply.body, { status: 200, headers: SSE_HEADERS });
  const events = splitEvents(reply.body);
  const stream = new ReadableStream({
    start(controller) {
      controller.enqueue(encoder.encode(events.slice(0, pauseBefore).join("")));
      setTimeout(() => {
        controller.enqueue(encoder.encode(events.slice(pauseBefore).join("")));
        controller.close();
      }, task.pause);
    },
  });
  return new Response(stream, { status: 200, headers: SSE_HEADERS });
}

/**
 * A `fetch` that notes when the first bytes of each response body reach JavaScript in this
 * process: for the first-token row, the moment a reply's first delta has arrived, whichever library
 * reads it next. The body passes through unchanged. `arrivedAt()` is that moment for the latest
 * request (`performance.now()`), undefined before its first bytes.
 */
export function arrivalTiming(inner = globalThis.fetch) {
  let arrived;
  const fetch = async (url, init) => {
    arrived = undefined;
    const response = await inner(url, init);
    if (!response.body) return response;
    let first = true;
    const noted = response.body.pipeThrough(
      new TransformStream({
        transform(chunk, controller) {
          if (first) {
            first = false;
            arrived = performance.now();
          }
          controller.enqueue(chunk);
        },
      }),
    );
    return new Response(noted, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
  return { fetch, arrivedAt: () => arrived };
}
