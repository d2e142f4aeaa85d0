import { useMachine } from "@xstate/react";
import { useCallback, useMemo } from "react";
import type { Message, PartsContent } from "../../actors/messages.js";
import type { ChartPosition, PendingApprovalView, RunOutputView } from "../protocol.js";
import { agentClientMachine, clientStatusOf, type AgentClientStatus } from "./agent-client-machine.js";
import type { ToolCallView } from "./run-state.js";
import type { FetchLike } from "./transport.js";

export interface UseAgentOptions {
  /** Where `agentHandler` is mounted, e.g. "/api". */
  url: string;
  /** The agent's name in `agentHandler({ agents })`. */
  agent: string;
  /** Follow an existing run from the start (e.g. one whose id the page kept across a reload). */
  runId?: string;
  /** Start each run on this thread, continuing its conversation (read it with `readThread`). */
  threadId?: string;
  fetch?: FetchLike;
  maxReconnects?: number;
}

export interface UseAgentResult {
  /** The conversation so far (user, assistant and tool messages), as the server holds it. */
  messages: Message[];
  /** The reply being streamed, until it becomes a message. */
  streamingText: string;
  /** The page's side: idle, connecting, streaming, awaitingApproval, reconnecting, done or failed. */
  status: AgentClientStatus;
  /** The agent's statechart position (value and dotted path), undefined before the first event. */
  state: ChartPosition | undefined;
  pendingApprovals: PendingApprovalView[];
  usage: { promptTokens: number; completionTokens: number; totalTokens: number };
  /** The run's result once it ends. */
  output: RunOutputView | undefined;
  runId: string | undefined;
  toolCalls: ToolCallView[];
  /** How many text deltas arrived in this run. */
  deltas: number;
  /** The last problem (a refused approval, a lost connection). */
  error: string | undefined;
  /** Start a run with a user message: text, or parts (text, images, files). */
  start(message: PartsContent): void;
  /** Follow another run (e.g. one started elsewhere). */
  resume(runId: string): void;
  approve(callId: string, args?: Record<string, unknown> | string): void;
  reject(callId: string, reason?: string): void;
  cancel(reason?: string): void;
}

/**
 * Run an agent served by `agentHandler` from a React component. The client side is a statechart
 * of its own (`agentClientMachine`), so its status is always one of its named states.
 */
export function useAgent(options: UseAgentOptions): UseAgentResult {
  const [snapshot, send] = useMachine(agentClientMachine, {
    input: {
      url: options.url,
      agent: options.agent,
      ...(options.runId !== undefined ? { runId: options.runId } : {}),
      ...(options.threadId !== undefined ? { threadId: options.threadId } : {}),
      ...(options.fetch ? { fetch: options.fetch } : {}),
      ...(options.maxReconnects !== undefined ? { maxReconnects: options.maxReconnects } : {}),
    },
  });
  const start = useCallback((message: PartsContent) => send({ type: "start", message }), [send]);
  const resume = useCallback((runId: string) => send({ type: "resume", runId }), [send]);
  const approve = useCallback((callId: string, args?: Record<string, unknown> | string) => send({ type: "approve", callId, ...(args !== undefined ? { args } : {}) }), [send]);
  const reject = useCallback((callId: string, reason?: string) => send({ type: "reject", callId, ...(reason !== undefined ? { reason } : {}) }), [send]);
  const cancel = useCallback((reason?: string) => send({ type: "cancel", ...(reason !== undefined ? { reason } : {}) }), [send]);
  const { run, error } = snapshot.context;
  const status = clientStatusOf(snapshot.value);
  return useMemo(
    () => ({
      messages: run.messages,
      streamingText: run.streamingText,
      status,
      state: run.state,
      pendingApprovals: run.pendingApprovals,
      usage: run.usage,
      output: run.output,
      runId: run.runId,
      toolCalls: run.toolCalls,
      deltas: run.deltas,
      error: error ?? run.error,
      start,
      resume,
      approve,
      reject,
      cancel,
    }),
    [run, error, status, start, resume, approve, reject, cancel],
  );
}
