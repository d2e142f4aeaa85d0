import { human, type Message } from "../../actors/messages.js";
import type { CheckpointStore } from "../../machines/persistence/checkpoints/store.js";
import { DEFAULT_INPUT_LIMITS, inputLimitProblem } from "../../machines/persistence/snapshot-limits.js";
import type { ReactMachine } from "../../machines/react-machine.js";
import { RunCommandSchema, StartRunSchema, type CommandAccepted, type IdentifiedRunEvent, type RunCommand } from "../protocol.js";
import { agUiResponse } from "./ag-ui.js";
import { chatResponse } from "./ai-sdk-chat.js";
import type { ChatRuns } from "./chat-runs.js";
import { readJsonBody } from "./body.js";
import { defaultStore } from "./default-store.js";
import { errorResponse, HttpError, jsonResponse } from "./errors.js";
import type { LiveRun } from "./live-run.js";
import { RunRegistry } from "./run-registry.js";
import { matchRoute, type Route } from "./routes.js";
import { streamResponse } from "./stream-response.js";

export interface AgentHandlerOptions {
  /** The agents a page may start, by the name it uses (`POST /runs { agent }`). */
  agents: Readonly<Record<string, ReactMachine>>;
  /**
   * Where runs are checkpointed, so a run parked for approval outlives the process. Default: the
   * embedded SQLite store at `storePath`. `false`: runs live in memory only. Give each machine the
   * same store as its `journal` so a restored run never repeats a tool call.
   */
  store?: CheckpointStore | false;
  /** The default store's file (default `.jianmu/web-runs.db`). */
  storePath?: string;
  /** The path the handler is mounted at, e.g. "/api" (default ""). */
  basePath?: string;
  /** Largest accepted request body (default 64 KiB). */
  maxBodyBytes?: number;
  /** Keep-alive comments on idle streams (default 15 s). */
  heartbeatMs?: number;
  /** How long a finished run stays in memory for late followers (default 10 min). */
  retainFinishedMs?: number;
  /**
   * With a store: a run waiting for approval that no page follows is let go from memory after this
   * long (default 5 min) and restored from its checkpoint when someone asks for it again.
   */
  releaseParkedMs?: number;
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
}

const DEFAULT_STORE_PATH = ".jianmu/web-runs.db";

/**
 * Serve agents over HTTP: `POST /runs` starts a run and streams it as server-sent events,
 * `POST /runs/:id/events` approves, rejects or cancels, `GET /runs/:id/stream` follows a run again
 * (Last-Event-ID honoured), `GET /runs/:id` tells its status, `GET /agents/:name/chart` draws the
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

  // An application that brings its own store never loads SQLite.
  const ownStore = options.store === undefined ? defaultStore(options.storePath ?? DEFAULT_STORE_PATH) : undefined;
  let opened: Promise<CheckpointStore & { close(): void }> | undefined;
  const store = async (): Promise<CheckpointStore | undefined> => {
    if (options.store === false) return undefined;
    if (options.store) return options.store;
    return (opened = ownStore!());
  };
  const runs = new RunRegistry({
    agents,
    store,
    retainFinishedMs: options.retainFinishedMs ?? 600_000,
    releaseParkedMs: options.store === false ? undefined : (options.releaseParkedMs ?? 300_000),
    onError,
  });

  const routes = {
    async startRun(request: Request) {
      const body = await readJsonBody(request, StartRunSchema, maxBodyBytes);
      if (!Object.hasOwn(agents, body.agent)) throw unknownAgent(body.agent, agents);
      checkInputLimits({ messages: body.messages, state: body.state });
      const messages: Message[] = [...(body.messages ?? []), ...(body.message !== undefined ? [human(body.message)] : [])];
      const run = await runs.start(body.agent, { messages, ...(body.state ? { state: body.state } : {}), ...(body.threadId !== undefined ? { threadId: body.threadId } : {}) });
      return streamResponse(run.log.all(), run.log, heartbeatMs, { location: `${basePath}/runs/${encodeURIComponent(run.runId)}`, "x-run-id": run.runId });
    },

    async runStatus(_request: Request, runId: string) {
      const found = await findRun(runId);
      return jsonResponse(found.kind === "live" ? found.run.view() : found.view);
    },

    async runStream(request: Request, runId: string) {
      const found = await findRun(runId);
      const lastEventId = request.headers.get("last-event-id") ?? new URL(request.url).searchParams.get("lastEventId");
      if (found.kind === "stored") return streamResponse([{ type: "run.snapshot", data: found.view, id: "stored.0" }], undefined, heartbeatMs);
      const log = found.run.log;
      const missed = lastEventId ? log.after(lastEventId) : undefined;
      // Replay what the follower missed; when its id is from another process (or absent), start from a snapshot.
      const backlog: readonly IdentifiedRunEvent[] = missed ?? [{ type: "run.snapshot", data: found.run.view(), id: log.lastId ?? `${log.epoch}.0` }];
      return streamResponse(backlog, log, heartbeatMs);
    },

    async runEvents(request: Request, runId: string) {
      const command = await readJsonBody(request, RunCommandSchema, maxBodyBytes);
      const found = await findRun(runId);
      if (found.kind === "stored" || !found.run.active) {
        const status = found.kind === "stored" ? found.view.status : found.run.view().status;
        throw new HttpError(409, "run_finished", `run ${runId} has finished (${status}); it takes no more events`);
      }
      apply(found.run, command);
      const view = found.run.view();
      const accepted: CommandAccepted = { runId, status: view.status, state: view.state };
      return jsonResponse(accepted, 202);
    },

    async aiSdkChat(request: Request, agent: string) {
      if (!Object.hasOwn(agents, agent)) throw unknownAgent(agent, agents);
      return chatResponse(request, agent, { runs: chatRuns, maxBodyBytes, heartbeatMs });
    },

    async agUi(request: Request, agent: string) {
      if (!Object.hasOwn(agents, agent)) throw unknownAgent(agent, agents);
      return agUiResponse(request, agent, { runs: chatRuns, maxBodyBytes, heartbeatMs });
    },

    async agentChart(_request: Request, agent: string) {
      if (!Object.hasOwn(agents, agent)) throw unknownAgent(agent, agents);
      const { renderLiveChart } = await import("../../visualize/live-chart.js");
      return new Response(renderLiveChart(agents[agent]!), { headers: { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" } });
    },
  };

  const chatRuns: ChatRuns = {
    start: (agent, messages) => {
      checkInputLimits({ messages });
      return runs.start(agent, { messages });
    },
    find: (runId) => runs.find(runId),
    command: apply,
  };

  async function findRun(runId: string) {
    const found = await runs.find(runId);
    if (!found) throw new HttpError(404, "unknown_run", `there is no run ${JSON.stringify(runId)} (it never started here, or its checkpoint was deleted)`);
    return found;
  }

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
      case "agentChart":
        return routes.agentChart(request, route.agent);
      case "aiSdkChat":
        return routes.aiSdkChat(request, route.agent);
      case "agUi":
        return routes.agUi(request, route.agent);
    }
  };

  const handler = (async (request: Request): Promise<Response> => {
    try {
      const path = new URL(request.url).pathname;
      if (basePath !== "" && path !== basePath && !path.startsWith(`${basePath}/`)) throw notFound(path);
      const matched = matchRoute(request.method, path.slice(basePath.length) || "/");
      if (!matched) throw notFound(path);
      if ("allow" in matched) throw new HttpError(405, "method_not_allowed", `${request.method} is not allowed on ${path}; use ${matched.allow}`, matched.allow);
      return await dispatch(matched.route, request);
    } catch (error) {
      if (error instanceof HttpError) return errorResponse(error);
      onError(error instanceof Error ? error : new Error(String(error)));
      return jsonResponse({ error: { code: "internal_error", message: "the server failed to handle this request; see its log" } }, 500);
    }
  }) as AgentHandler;

  handler.aiSdk = (agent: string) => {
    if (!Object.hasOwn(agents, agent)) throw new TypeError(`agentHandler(...).aiSdk: ${unknownAgent(agent, agents).message}`);
    const route = `${basePath}/agents/${encodeURIComponent(agent)}/chat`;
    // The chat route, wherever the page posts (useChat's default is /api/chat).
    return (request: Request) => handler(new Request(new URL(route, request.url), request));
  };

  handler.close = async () => {
    runs.stopAll();
    if (opened) (await opened.catch(() => undefined))?.close();
  };
  return handler;
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

/** The run queue's limits (deep state would pass the body's schema and fail at the run's first restore). */
function checkInputLimits(input: { messages?: unknown; state?: unknown }): void {
  const tooBig = inputLimitProblem(input);
  if (tooBig) throw new HttpError(400, "invalid_body", `${tooBig.path || "the body"}: ${tooBig.problem} (limits: ${DEFAULT_INPUT_LIMITS.maxDepth} levels, ${DEFAULT_INPUT_LIMITS.maxChars} characters)`, tooBig.path || undefined);
}

function unknownAgent(agent: string, agents: Readonly<Record<string, ReactMachine>>): HttpError {
  return new HttpError(404, "unknown_agent", `there is no agent ${JSON.stringify(agent)}; this handler serves ${Object.keys(agents).map((name) => JSON.stringify(name)).join(", ")}`, "agent");
}

function notFound(path: string): HttpError {
  return new HttpError(404, "not_found", `no route ${path}; the routes are POST /runs, GET /runs/:id, GET /runs/:id/stream, POST /runs/:id/events, GET /agents/:name/chart, POST /agents/:name/chat, POST /agents/:name/ag-ui`);
}
