import { replies, startOpenAIServer } from "jianmu/testing";
import { replyFor } from "./replies.mjs";
import { parseTaskModel, roundOf } from "./task.mjs";

/*
 * The scripted OpenAI-compatible server, in a process of its own (forked by run.mjs) so that its
 * work never counts against a contender's CPU time. It answers at once from the task named by
 * the request's model, over Chat Completions or the Responses API (by the path). Held requests (tasks with `-holdN`) wait until a client calls
 * /v1/bench/release; /v1/bench/parked?atLeast=N answers once N requests are waiting. A paused
 * task's answer (`-pauseN`) sends its first delta, waits N ms, then sends the rest; /v1/bench/close-idle
 * closes every kept-alive connection with no request in flight.
 *
 * IPC from the parent: { cmd: "restart" } starts a fresh server (a new request log for every
 * scenario) and answers { baseURL }; { cmd: "stop" } closes it and exits.
 */

let server;
let parked = [];
let parkedWaiters = [];

function wakeParkedWaiters() {
  parkedWaiters = parkedWaiters.filter((waiter) => {
    if (parked.length < waiter.atLeast) return true;
    waiter.resolve(replies.json({ parked: parked.length }));
    return false;
  });
}

function control(request) {
  const url = new URL(request.path, "http://bench");
  if (url.pathname === "/v1/bench/parked") {
    const atLeast = Number(url.searchParams.get("atLeast") ?? "1");
    return new Promise((resolve) => {
      parkedWaiters.push({ atLeast, resolve });
      wakeParkedWaiters();
    });
  }
  if (url.pathname === "/v1/bench/close-idle") {
    // Memory figures are taken without the clients' idle pooled connections (scenarios.mjs `memory`).
    server.closeIdleConnections();
    return replies.json({ closed: true });
  }
  if (url.pathname === "/v1/bench/release") {
    const released = parked.length;
    for (const release of parked.splice(0)) release();
    return replies.json({ released });
  }
  return replies.error(404, `bench server: unknown path ${url.pathname}`);
}

function respond(request) {
  if (request.path.startsWith("/v1/bench/")) return control(request);
  const body = request.body ?? {};
  const task = parseTaskModel(body.model);
  if (!task) return replies.error(400, `bench server: model ${JSON.stringify(body.model)} names no bench task`);
  const round = roundOf(request.path, body, task);
  const { reply: built, pauseBefore } = replyFor(task, body.model, round, body.stream === true, request.path.endsWith("/responses"));
  const reply = pauseBefore === undefined ? built : { ...built, delayMs: (event) => (event === pauseBefore ? task.pause : 0) };
  if (task.hold !== round) return reply;
  return new Promise((resolve) => {
    parked.push(() => resolve(reply));
    wakeParkedWaiters();
  });
}

async function restart() {
  if (server) await stop();
  server = await startOpenAIServer({ respond });
  return server.baseURL;
}

async function stop() {
  for (const release of parked.splice(0)) release();
  parkedWaiters = [];
  const closing = server?.close();
  server = undefined;
  await closing;
}

process.on("message", (message) => {
  const reply = (payload) => process.send?.({ id: message.id, ...payload });
  if (message.cmd === "restart") {
    restart().then((baseURL) => reply({ baseURL }), (error) => reply({ error: String(error?.stack ?? error) }));
  } else if (message.cmd === "stop") {
    stop().then(() => {
      reply({ stopped: true });
      process.disconnect?.();
    });
  }
});
// The parent went away (Ctrl-C, crash): do not linger.
process.on("disconnect", () => {
  void stop().finally(() => process.exit(0));
});
process.send?.({ ready: true });
