import { human, type Message } from "../../actors/messages.js";
import type { CheckpointStore } from "../../machines/persistence/checkpoints/store.js";
import type { ReactMachine } from "../../machines/react-machine.js";
import { RunCommandSchema, StartRunSchema, type CommandAccepted, type IdentifiedRunEvent, type RunCommand } from "../protocol.js";
import { agUiResponse } from "./ag-ui.js";
import { chatResponse } from "./ai-sdk-chat.js";
import type { ChatRuns, ChatStream } from "./chat-runs.js";
import { readJsonBody } from "./body.js";
import { defaultStore } from "./default-store.js";
import { errorResponse, HttpError, jsonResponse, loggedFailure } from "./errors.js";
import type { LiveRun } from "./live-run.js";
import { RunRegistry } from "./run-registry.js";
import { matchRoute, type Route } from "./routes.js";
import { streamResponse } from "./stream-response.js";
import { authorized, checkClientInput, checkInputLimits, type Authorize, type AuthorizeAction, type ClientInputPolicy } from "./access.js";
import { QueueRuns } from "./queue-runs.js";
import { queueChatRuns } from "./queue-chat-runs.js";
import { threadResponse } from "./threads.js";
import { registerHandlerStats, StreamCount } from "./handler-stats.js";
import { RateLimiter, type RateLimitOptions } from "./rate-limit.js";
import { withPeerOf } from "./node-adapter.js";
import type { RunStore } from "../../queue/run-store.js";

export interface AgentHandlerOptions {
  /** The agents a page may start, by the name it uses (`POST /runs { agent }`). */
  agents: Readonly<Record<string, ReactMachine>>;
  /**
   * Where runs live. A `RunStore` (`PostgresRunStore`, `SqliteRunStore`, `MemoryRunStore`): a start
   * submits the run to the queue, a worker runs it, its events are written to the store, and any
   * replica on the same store serves any run (nothing is held only in this process), the chat routes
   * (`/agents/:name/chat`, `/agents/:name/ag-ui`) included. A plain
   * `CheckpointStore`: runs execute in this process and are checkpointed there, so a run parked for
   * approval outlives it. Default: the embedded SQLite checkpoint store at `storePath`. `false`:
   * runs live in memory only. Give each machine the same store as its `journal` so a restored run
   * never repeats a tool call.
   */
  store?: RunStore | CheckpointStore | false;
  /**
   * With a `RunStore`: run an embedded worker in this process (default true, so one process and
   * SQLite work with no other setup). `false`: this process only serves HTTP, and `startWorker({
   * store, agents, observe: storeRunEvents(store) })` processes run the agents.
   */
  worker?: boolean;
  /**
   * Asked before every action (`start`, `read`, `approve`, `cancel`) with the request, the agent and
   * the run id; anything but `true` answers 403 without a word about the run. Default: everyone may
   * do everything, which only suits a server nobody else can reach.
   */
  authorize?: Authorize;
  /**
   * By agent, what a page may send beyond user messages: `{ support: { history: true, state: true } }`.
   * Default: user messages only (no system prompts, assistant turns, tool results or host state).
   */
  clientInput?: Readonly<Record<string, ClientInputPolicy>>;
  /** A request body must arrive within this long (default 10 s); a slower client gets 408. */
  bodyTimeoutMs?: number;
  /** With a `RunStore`: how often a followed run is read when no notification came (default 250 ms; PostgreSQL notifies at once). */
  streamPollMs?: number;
  /** The default store's file (default `.jianmu/web-runs.db`). */
  storePath?: string;
  /**
   * The default store deletes a run this long after it finished (default 7 days; `false` keeps
   * every run). A store you pass has its own `keepFinishedMs` option, swept by this handler or its worker.
   */
  keepFinishedMs?: number | false;
  /** The path the handler is mounted at, e.g. "/api" (default ""). */
  basePath?: string;
  /** Largest accepted request body (default 64 KiB). */
  maxBodyBytes?: number;
  /** Keep-alive comments on idle streams (default 15 s). */
  heartbeatMs?: number;
  /** How long a finished run stays in memory for late followers (default 10 min). */
  retainFinishedMs?: number;
  /**
   * At most this many finished runs stay in memory (default 1,000); past it the longest finished is
   * let go first. A run let go is read from the store when there is one; otherwise it answers 410 `run_expired`.
   */
  maxFinishedRuns?: number;
  /**
   * With a store: a run waiting for approval that no page follows is let go from memory after this
   * long (default 5 min) and restored from its checkpoint when someone asks for it again.
   */
  releaseParkedMs?: number;
  /**
   * Off by default. `{ windowMs, max, key? }`: at most `max` requests per client in each `windowMs`;
   * past it the answer is 429 `rate_limited` with `Retry-After` (rate-limit.ts says how clients are told apart).
   */
  rateLimit?: RateLimitOptions;
  /** Failed checkpoint saves and other trouble that is not a request's fault (default: console.error). */
  onError?: (error: Error) => void;
}

/** A fetch-style handler: `(Request) => Promise<Response>`, plus `close()` for shutdown. */
export interface AgentHandler {
  (request: Request): Promise<Response>;
  /**
   * A fetch-style handler for one agent speaking the AI SDK's UI message stream, for `useChat`
   * where it posts (its default `/api/chat`): the same as `POST /agents/:name/chat`.
   */
  aiSdk(agent: string): (request: Request) => Promise<Response>;
  /** Stop the live runs (parked and running ones stay in the store) and close the default store. */
  close(): Promise<void>;
  /** How many runs this process holds in memory: live (running or parked) and finished ones kept for late followers. */
  held(): { live: number; finished: number };
}

const DEFAULT_STORE_PATH = ".jianmu/web-runs.db";

/**
 * Serve agents over HTTP: `POST /runs` starts a run and streams it as server-sent events,
 * `POST /runs/:id/events` approves, rejects or cancels, `GET /runs/:id/stream` follows a run again
 * (Last-Event-ID honoured), `GET /runs/:id` tells its status, `GET /threads/:threadId` lists a
 * thread's runs and its conversation, `GET /agents/:name/chart` draws the
 * agent's statechart (an HTML fragment with inline SVG) for a live view, `POST /agents/:name/chat`
 * speaks the AI SDK's UI message stream to `useChat` (ai-sdk-chat.ts), `POST /agents/:name/ag-ui`
 * speaks AG-UI (ag-ui.ts).
 */
export function agentHandler(options: AgentHandlerOptions): AgentHandler {
  const agents = checkAgents(options.agents);
  const basePath = (options.basePath ?? "").replace(/\/+$/, "");
  const maxBodyBytes = options.maxBodyBytes ?? 64 * 1024;
  const heartbeatMs = options.heartbeatMs ?? 15_000;
  const onError = options.onError ?? ((error: Error) => console.error(`jianmu/http: ${error.message}`));

  const checkpoints = checkpointStore(options);
  const limiter = options.rateLimit ? new RateLimiter(options.rateLimit) : undefined;
  const authorize = options.authorize;
  const bodyTimeoutMs = options.bodyTimeoutMs ?? 10_000;
  const readBody = <S extends Parameters<typeof readJsonBody>[1]>(request: Request, schema: S) => readJsonBody(request, schema, maxBodyBytes, bodyTimeoutMs);
  const queue = isRunStore(options.store)
    ? new QueueRuns({ store: options.store, agents, worker: options.worker ?? true, pollMs: options.streamPollMs ?? 250, retainEventsMs: options.retainFinishedMs ?? 600_000, onError })
    : undefined;
  const runs = heldRuns(options, agents, checkpoints.store, onError);
  const streams = new StreamCount();

  const routes = {
    async startRun(request: Request) {
      const body = await readBody(request, StartRunSchema);
      if (!Object.hasOwn(agents, body.agent)) throw unknownAgent(body.agent);
      await authorized(authorize, { request, action: "start", agent: body.agent, ...(body.threadId !== undefined ? { threadId: body.threadId } : {}) });
      checkClientInput(body, options.clientInput?.[body.agent]);
      checkInputLimits({ messages: body.messages, state: body.state });
      const messages: Message[] = [...(body.messages ?? []), ...(body.message !== undefined ? [human(body.message)] : [])];
      const input = { messages, ...(body.state ? { state: body.state } : {}), ...(body.threadId !== undefined ? { threadId: body.threadId } : {}) };
      const located = (runId: string) => ({ location: `${basePath}/runs/${encodeURIComponent(runId)}`, "x-run-id": runId });
      if (queue) {
        const runId = await queue.start(body.agent, input);
        return streamResponse([], streams.counted(queue.follower(runId, null)), heartbeatMs, located(runId));
      }
      const run = await runs.start(body.agent, input);
      return streamResponse(run.log.all(), streams.counted(run.log), heartbeatMs, located(run.runId));
    },

    async runStatus(request: Request, runId: string) {
      if (queue) {
        await authorized(authorize, { request, action: "read", agent: await queue.agentOf(runId), runId });
        return jsonResponse(await queue.view(runId));
      }
      const found = await runs.findOr404(runId);
      await authorized(authorize, { request, action: "read", agent: agentOfFound(found), runId });
      return jsonResponse(found.kind === "live" ? found.run.view() : found.view);
    },

    async runStream(request: Request, runId: string) {
      const lastEventId = request.headers.get("last-event-id") ?? new URL(request.url).searchParams.get("lastEventId");
      if (queue) {
        await authorized(authorize, { request, action: "read", agent: await queue.agentOf(runId), runId });
        return streamResponse([], streams.counted(queue.follower(runId, lastEventId)), heartbeatMs);
      }
      const found = await runs.findOr404(runId);
      await authorized(authorize, { request, action: "read", agent: agentOfFound(found), runId });
      if (found.kind === "stored") return streamResponse([{ type: "run.snapshot", data: found.view, id: "stored.0" }], undefined, heartbeatMs);
      const log = found.run.log;
      const missed = lastEventId ? log.after(lastEventId) : undefined;
      // Replay what the follower missed; when its id is from another process (or absent), start from a snapshot.
      const backlog: readonly IdentifiedRunEvent[] = missed ?? [{ type: "run.snapshot", data: found.run.view(), id: log.lastId ?? `${log.epoch}.0` }];
      return streamResponse(backlog, streams.counted(log), heartbeatMs);
    },

    async runEvents(request: Request, runId: string) {
      const command = await readBody(request, RunCommandSchema);
      const action: AuthorizeAction = command.type === "agent.cancel" ? "cancel" : "approve";
      if (queue) {
        await authorized(authorize, { request, action, agent: await queue.agentOf(runId), runId });
        return jsonResponse(await queue.command(runId, command), 202);
      }
      const found = await runs.findOr404(runId);
      await authorized(authorize, { request, action, agent: agentOfFound(found), runId });
      if (found.kind === "stored" || !found.run.active) {
        const status = found.kind === "stored" ? found.view.status : found.run.view().status;
        throw new HttpError(409, "run_finished", `run ${runId} has finished (${status}); it takes no more events`);
      }
      apply(found.run, command);
      const view = found.run.view();
      const accepted: CommandAccepted = { runId, status: view.status, state: view.state };
      return jsonResponse(accepted, 202);
    },

    /** `useChat`'s route or AG-UI's: on the run queue when there is one, else on this process's runs (chatRuns). */
    async chat(request: Request, agent: string, respond: typeof chatResponse | typeof agUiResponse) {
      if (!Object.hasOwn(agents, agent)) throw unknownAgent(agent);
      const chat = queue ? queueChatRuns(request, queue, authorize) : chatRuns(request, runs, authorize);
      return respond(request, agent, { runs: chat, maxBodyBytes, heartbeatMs, bodyTimeoutMs });
    },

    async agentChart(request: Request, agent: string) {
      if (!Object.hasOwn(agents, agent)) throw unknownAgent(agent);
      await authorized(authorize, { request, action: "read", agent });
      const { renderLiveChart } = await import("../../visualize/live-chart.js");
      return new Response(renderLiveChart(agents[agent]!), { headers: { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" } });
    },
  };

  const dispatch = (route: Route, request: Request): Promise<Response> => {
    switch (route.name) {
      case "startRun":
        return routes.startRun(request);
      case "runStatus":
        return routes.runStatus(request, route.runId);
      case "runStream":
        return routes.runStream(request, route.runId);
      case "runEvents":
        return routes.runEvents(request, route.runId);
      case "thread":
        return threadResponse(request, route.threadId, { store: checkpoints.store, agents, authorize });
      case "agentChart":
        return routes.agentChart(request, route.agent);
      case "aiSdkChat":
        return routes.chat(request, route.agent, chatResponse);
      case "agUi":
        return routes.chat(request, route.agent, agUiResponse);
    }
  };

  const handler = (async (request: Request): Promise<Response> => {
    try {
      const path = new URL(request.url).pathname;
      if (basePath !== "" && path !== basePath && !path.startsWith(`${basePath}/`)) throw notFound(path);
      const matched = matchRoute(request.method, path.slice(basePath.length) || "/");
      if (!matched) throw notFound(path);
      if ("allow" in matched) throw new HttpError(405, "method_not_allowed", `${request.method} is not allowed on ${path}; use ${matched.allow}`, undefined, matched.allow);
      const limited = await limiter?.check(request);
      if (limited) return limited;
      return await dispatch(matched.route, request);
    } catch (error) {
      return errorResponse(error instanceof HttpError ? error : loggedFailure("internal_error", "the server failed to handle this request", error, onError));
    }
  }) as AgentHandler;

  handler.aiSdk = (agent: string) => aiSdkRoute(handler, agents, basePath, agent);

  registerHandlerStats(handler, streams, runs, queue?.followers);
  handler.held = () => runs.held();

  handler.close = async () => {
    runs.stopAll();
    await queue?.close();
    await checkpoints.close();
  };
  return handler;
}

/** The runs this process holds (all of them without a `RunStore`; none with one), with the handler's memory bounds. */
function heldRuns(options: AgentHandlerOptions, agents: Readonly<Record<string, ReactMachine>>, store: () => Promise<CheckpointStore | undefined>, onError: (error: Error) => void): RunRegistry {
  return new RunRegistry({
    agents,
    store,
    retainFinishedMs: options.retainFinishedMs ?? 600_000,
    maxFinishedRuns: options.maxFinishedRuns ?? 1_000,
    // Nothing parked is held here without a store, nor with a run store (its runs park in the store): no sweep.
    releaseParkedMs: options.store === false || isRunStore(options.store) ? undefined : (options.releaseParkedMs ?? 300_000),
    onError,
  });
}

/** The store runs held in this process are checkpointed in: the given one, none (`false`), or the default SQLite file. */
function checkpointStore(options: AgentHandlerOptions): { store: () => Promise<CheckpointStore | undefined>; close: () => Promise<void> } {
  // Checked now (a missing better-sqlite3 fails here, with the fix), opened on first use: an
  // application that brings its own store never loads SQLite.
  const own = options.store === undefined ? defaultStore({ path: options.storePath ?? DEFAULT_STORE_PATH, ...defaultRetention(options.keepFinishedMs) }) : undefined;
  let opened: Promise<CheckpointStore & { close(): void }> | undefined;
  return {
    store: async () => {
      if (options.store === false) return undefined;
      if (options.store) return options.store;
      return (opened = own!());
    },
    close: async () => {
      if (opened) (await opened.catch(() => undefined))?.close();
    },
  };
}

const DEFAULT_KEEP_FINISHED_MS = 7 * 24 * 3_600_000;

function defaultRetention(keepFinishedMs: number | false | undefined): { keepFinishedMs?: number } {
  if (keepFinishedMs === false) return {};
  return { keepFinishedMs: keepFinishedMs ?? DEFAULT_KEEP_FINISHED_MS };
}

/** `handler.aiSdk(agent)`: the chat route, wherever the page posts (useChat's default is /api/chat). */
function aiSdkRoute(handler: AgentHandler, agents: Readonly<Record<string, ReactMachine>>, basePath: string, agent: string): (request: Request) => Promise<Response> {
  if (!Object.hasOwn(agents, agent)) throw new TypeError(`agentHandler(...).aiSdk: there is no agent ${JSON.stringify(agent)}; this handler serves ${Object.keys(agents).map((name) => JSON.stringify(name)).join(", ")}`);
  const route = `${basePath}/agents/${encodeURIComponent(agent)}/chat`;
  return (request: Request) => handler(withPeerOf(request, new Request(new URL(route, request.url), request)));
}

/**
 * The chat routes' runs for one request without a run queue: held in this process (RunRegistry), and
 * `authorize` is asked before a start, a read of an earlier run and an approval, as on `/runs`.
 */
function chatRuns(request: Request, runs: RunRegistry, authorize: Authorize | undefined): ChatRuns {
  return {
    start: async (agent, messages) => {
      await authorized(authorize, { request, action: "start", agent });
      checkInputLimits({ messages });
      return heldStream(await runs.start(agent, { messages }), 0);
    },
    view: async (runId, action) => {
      const found = await runs.find(runId);
      if (!found) return undefined;
      await authorized(authorize, { request, action, agent: agentOfFound(found), runId });
      return found.kind === "live" ? found.run.view() : found.view;
    },
    answer: async (view, commands) => {
      const found = await runs.find(view.runId);
      if (found?.kind !== "live" || !found.run.active) throw new HttpError(409, "run_finished", `run ${view.runId} has finished; it takes no more approvals`);
      const from = found.run.log.all().length;
      for (const command of commands) apply(found.run, command);
      return heldStream(found.run, from);
    },
  };
}

/** A run held here, told from the `from`th event of its log. */
function heldStream(run: LiveRun, from: number): ChatStream {
  return {
    runId: run.runId,
    backlog: () => run.log.all().slice(from),
    feed: run.log,
    waiting: () => run.view().status === "awaitingApproval",
    pendingApprovals: () => run.view().pendingApprovals,
  };
}

/**
 * Send a command to a live run. It is checked first against what the run waits for, and an edited
 * argument set the tool refuses is reported as 422: either way the run is left as it was.
 */
function apply(run: LiveRun, command: RunCommand): void {
  if (command.type === "agent.cancel") {
    run.actor.send({ type: "agent.cancel", ...(command.reason !== undefined ? { reason: command.reason } : {}) });
    return;
  }
  const pending = run.view().pendingApprovals;
  if (!pending.some((call) => call.callId === command.callId)) {
    const waiting = pending.length > 0 ? `it waits for ${pending.map((call) => call.callId).join(", ")}` : "it waits for no approval";
    throw new HttpError(409, "not_pending", `call ${JSON.stringify(command.callId)} of run ${run.runId} is not waiting for approval; ${waiting}`, "callId");
  }
  let refused: string | undefined;
  const listener = run.actor.on("guard.approval.refused", (event) => {
    if (event.callId === command.callId) refused = event.reason;
  });
  try {
    run.actor.send(command);
  } finally {
    listener.unsubscribe();
  }
  if (refused !== undefined) throw new HttpError(422, "command_refused", refused, command.type === "guard.approve" ? "args" : "callId");
}

function checkAgents(agents: AgentHandlerOptions["agents"]): Readonly<Record<string, ReactMachine>> {
  if (!agents || typeof agents !== "object" || Object.keys(agents).length === 0) {
    throw new TypeError("agentHandler: options.agents must name at least one agent, e.g. { agents: { assistant: createReactMachine({ ... }) } }");
  }
  for (const [name, machine] of Object.entries(agents)) {
    if (!/^[\w-]{1,64}$/.test(name)) throw new TypeError(`agentHandler: agent name ${JSON.stringify(name)} must be 1-64 letters, digits, '_' or '-' (it appears in URLs)`);
    if (!machine || typeof (machine as { id?: unknown }).id !== "string" || typeof (machine as { provide?: unknown }).provide !== "function") {
      throw new TypeError(`agentHandler: options.agents.${name} must be a machine from createReactMachine(...)`);
    }
  }
  return agents;
}

/** Named without listing the others: an anonymous client learns nothing about what else is served. */
function unknownAgent(agent: string): HttpError {
  return new HttpError(404, "unknown_agent", `there is no agent ${JSON.stringify(agent.slice(0, 64))} here`, "agent");
}

function agentOfFound(found: { kind: "live"; run: LiveRun } | { kind: "stored"; view: { agent: string } }): string {
  return found.kind === "live" ? found.run.agent : found.view.agent;
}

function isRunStore(store: AgentHandlerOptions["store"]): store is RunStore {
  return typeof store === "object" && store !== null && typeof (store as Partial<RunStore>).submit === "function" && typeof (store as Partial<RunStore>).claim === "function";
}

function notFound(path: string): HttpError {
  return new HttpError(404, "not_found", `no route ${path}; the routes are POST /runs, GET /runs/:id, GET /runs/:id/stream, POST /runs/:id/events, GET /threads/:threadId, GET /agents/:name/chart, POST /agents/:name/chat, POST /agents/:name/ag-ui`);
}
