import { assign, fromCallback, fromPromise, not, setup, spawnChild } from "xstate";
import type { RunCommand, RunEvent } from "../protocol.js";
import { applyRunEvent, EMPTY_RUN, isFinished, type RunState } from "./run-state.js";
import { openRunStream, sendRunCommand, StreamError, type FetchLike, type StreamRequest } from "./transport.js";
import type { PartsContent } from "../../actors/messages.js";

/**
 * The page side of a run, as a statechart of its own:
 *
 *   idle ──start/resume──► live{ connecting → streaming ⇄ awaitingApproval } ──run ends──► done
 *   live ──stream lost──► reconnecting ──after a pause──► live (GET /runs/:id/stream, Last-Event-ID)
 *   live ──refused / too many retries──► failed;  done, failed ──start/resume──► live
 *
 * approve / reject / cancel are posted from any state once the run id is known.
 */
export interface AgentClientInput {
  /** Where the agent handler is mounted, e.g. "/api". */
  url: string;
  agent: string;
  /** Follow this run at once (e.g. after a page reload). */
  runId?: string;
  /** Start each run on this thread: it continues the thread's conversation (`GET /threads/:threadId`, `readThread`). */
  threadId?: string;
  fetch?: FetchLike;
  /** Reconnection attempts before giving up (default 40). */
  maxReconnects?: number;
}

export interface AgentClientContext {
  url: string;
  agent: string;
  threadId: string | undefined;
  fetch: FetchLike;
  maxReconnects: number;
  run: RunState;
  /** The message of a run still to be created (the stream is a POST /runs). */
  message: PartsContent | undefined;
  lastEventId: string | undefined;
  /** Whether the current connection has delivered an event. */
  received: boolean;
  reconnects: number;
  /** The last problem: a refused command, a lost stream. Cleared by the next success. */
  error: string | undefined;
}

export type AgentClientEvent =
  | { type: "start"; message: PartsContent }
  | { type: "resume"; runId: string }
  | { type: "approve"; callId: string; args?: Record<string, unknown> | string }
  | { type: "reject"; callId: string; reason?: string }
  | { type: "cancel"; reason?: string }
  | { type: "sse.event"; event: RunEvent; id: string | undefined }
  | { type: "sse.ended" }
  | { type: "sse.lost"; message: string }
  | { type: "sse.refused"; message: string }
  | { type: "command.failed"; message: string };

/** Pause before reconnection attempt n (0-based): 200 ms, doubling, at most 2 s. */
export function reconnectDelay(attempt: number): number {
  return Math.min(200 * 2 ** attempt, 2_000);
}

const runStream = fromCallback<AgentClientEvent, StreamRequest>(({ input, sendBack }) => {
  // One controller per request, aborted when the state that invoked it is left.
  const controller = new AbortController();
  openRunStream(input, controller.signal, (event, id) => sendBack({ type: "sse.event", event, id })).then(
    () => sendBack({ type: "sse.ended" }),
    (error: unknown) => {
      if (controller.signal.aborted) return;
      const message = error instanceof Error ? error.message : String(error);
      sendBack(error instanceof StreamError && error.final ? { type: "sse.refused", message } : { type: "sse.lost", message });
    },
  );
  return () => controller.abort();
});

interface CommandInput {
  fetch: FetchLike;
  url: string;
  runId: string;
  command: RunCommand;
  /** Told when the server refuses (the machine does not wait for the answer). */
  client: { send: (event: AgentClientEvent) => void };
}

/** One request per command; it ends with the request (XState aborts `signal` if the client stops first). */
const postCommand = fromPromise<void, CommandInput>(async ({ input, signal }) => {
  try {
    await sendRunCommand(input.fetch, input.url, input.runId, input.command, signal);
  } catch (error) {
    if (!signal.aborted) input.client.send({ type: "command.failed", message: error instanceof Error ? error.message : String(error) });
  }
});

function commandOf(event: AgentClientEvent): RunCommand | undefined {
  switch (event.type) {
    case "approve":
      return { type: "guard.approve", callId: event.callId, ...(event.args !== undefined ? { args: event.args } : {}) };
    case "reject":
      return { type: "guard.reject", callId: event.callId, ...(event.reason !== undefined ? { reason: event.reason } : {}) };
    case "cancel":
      return { type: "agent.cancel", ...(event.reason !== undefined ? { reason: event.reason } : {}) };
    default:
      return undefined;
  }
}

export const agentClientMachine = setup({
  types: {
    context: {} as AgentClientContext,
    events: {} as AgentClientEvent,
    input: {} as AgentClientInput,
  },
  actors: { runStream, postCommand },
  guards: {
    finished: ({ context }) => isFinished(context.run),
    waitingForApproval: ({ context }) => context.run.pendingApprovals.length > 0,
    receiving: ({ context }) => context.received,
    hasRun: ({ context }) => context.run.runId !== undefined,
    canReconnect: ({ context }) => context.run.runId !== undefined && context.reconnects < context.maxReconnects,
  },
  actions: {
    beginRun: assign(({ event }) => ({
      run: EMPTY_RUN,
      message: event.type === "start" ? event.message : undefined,
      lastEventId: undefined,
      reconnects: 0,
      error: undefined,
    })),
    followRun: assign(({ event }) => ({
      run: event.type === "resume" ? { ...EMPTY_RUN, runId: event.runId } : EMPTY_RUN,
      message: undefined,
      lastEventId: undefined,
      reconnects: 0,
      error: undefined,
    })),
    applyEvent: assign(({ context, event }) => {
      if (event.type !== "sse.event") return {};
      return {
        run: applyRunEvent(context.run, event.event),
        lastEventId: event.id ?? context.lastEventId,
        received: true,
        reconnects: 0,
        error: undefined,
        // Once the server has the run, a reconnection follows it instead of starting another.
        message: undefined,
      };
    }),
    noteProblem: assign(({ event }) => ({ error: event.type !== "start" && "message" in event ? event.message : undefined })),
    countReconnect: assign(({ context }) => ({ reconnects: context.reconnects + 1 })),
    sendCommand: spawnChild("postCommand", {
      input: ({ context, event, self }) => ({
        fetch: context.fetch,
        url: context.url,
        runId: context.run.runId!,
        command: commandOf(event)!,
        client: self as unknown as CommandInput["client"],
      }),
    }),
  },
  delays: {
    reconnectDelay: ({ context }) => reconnectDelay(context.reconnects),
  },
}).createMachine({
  id: "agentClient",
  context: ({ input }) => ({
    url: input.url,
    agent: input.agent,
    threadId: input.threadId,
    fetch: input.fetch ?? ((url, init) => globalThis.fetch(url, init)),
    maxReconnects: input.maxReconnects ?? 40,
    run: input.runId ? { ...EMPTY_RUN, runId: input.runId } : EMPTY_RUN,
    message: undefined,
    lastEventId: undefined,
    received: false,
    reconnects: 0,
    error: undefined,
  }),
  initial: "idle",
  on: {
    approve: { guard: "hasRun", actions: "sendCommand" },
    reject: { guard: "hasRun", actions: "sendCommand" },
    cancel: { guard: "hasRun", actions: "sendCommand" },
    "command.failed": { actions: "noteProblem" },
  },
  states: {
    idle: {
      // Created with a run id (a reloaded page): follow that run at once.
      always: { guard: "hasRun", target: "live" },
      on: {
        start: { target: "live", actions: "beginRun" },
        resume: { target: "live", actions: "followRun" },
      },
    },
    live: {
      entry: assign({ received: false }),
      invoke: {
        src: "runStream",
        input: ({ context }): StreamRequest =>
          context.message !== undefined
            ? { kind: "start", url: context.url, agent: context.agent, message: context.message, threadId: context.threadId, fetch: context.fetch }
            : { kind: "follow", url: context.url, runId: context.run.runId!, lastEventId: context.lastEventId, fetch: context.fetch },
      },
      on: {
        "sse.event": { actions: "applyEvent" },
        "sse.ended": [
          { guard: "finished", target: "done" },
          { guard: "canReconnect", target: "reconnecting" },
          { target: "failed", actions: assign({ error: "the stream ended before the run did" }) },
        ],
        "sse.lost": [
          { guard: "canReconnect", target: "reconnecting", actions: "noteProblem" },
          { target: "failed", actions: "noteProblem" },
        ],
        "sse.refused": { target: "failed", actions: "noteProblem" },
      },
      initial: "connecting",
      states: {
        connecting: {
          always: [
            { guard: "finished", target: "#agentClient.done" },
            { guard: "waitingForApproval", target: "awaitingApproval" },
            { guard: "receiving", target: "streaming" },
          ],
        },
        streaming: {
          always: [
            { guard: "finished", target: "#agentClient.done" },
            { guard: "waitingForApproval", target: "awaitingApproval" },
          ],
        },
        awaitingApproval: {
          always: [
            { guard: "finished", target: "#agentClient.done" },
            { guard: not("waitingForApproval"), target: "streaming" },
          ],
        },
      },
    },
    reconnecting: {
      entry: "countReconnect",
      after: { reconnectDelay: { target: "live" } },
      on: {
        start: { target: "live", actions: "beginRun" },
        resume: { target: "live", actions: "followRun" },
      },
    },
    done: {
      on: {
        start: { target: "live", actions: "beginRun" },
        resume: { target: "live", actions: "followRun" },
      },
    },
    failed: {
      on: {
        start: { target: "live", actions: "beginRun" },
        resume: { target: "live", actions: "followRun" },
      },
    },
  },
});

/** The client's state as one name: the page's status. */
export type AgentClientStatus = "idle" | "connecting" | "streaming" | "awaitingApproval" | "reconnecting" | "done" | "failed";

export function clientStatusOf(value: unknown): AgentClientStatus {
  if (typeof value === "string") return value as AgentClientStatus;
  const live = (value as { live?: string }).live;
  return (live ?? "connecting") as AgentClientStatus;
}
