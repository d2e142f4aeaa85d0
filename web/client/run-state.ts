import type { Message } from "../../actors/messages.js";
import type { ChartPosition, PendingApprovalView, RunEvent, RunOutputView, RunStatus } from "../protocol.js";
import { describeContent } from "../../actors/content-parts.js";

/** A tool call as the page shows it. */
export interface ToolCallView {
  callId: string;
  name: string;
  arguments: string;
  status: "awaitingApproval" | "running" | "completed" | "failed" | "denied";
  output?: string;
}

/** Everything the page knows about the run it follows, built from the run's events alone. */
export interface RunState {
  runId: string | undefined;
  agent: string | undefined;
  status: RunStatus | undefined;
  state: ChartPosition | undefined;
  messages: Message[];
  streamingText: string;
  /** How many text deltas arrived (a page can show that the answer streamed). */
  deltas: number;
  toolCalls: ToolCallView[];
  pendingApprovals: PendingApprovalView[];
  usage: { promptTokens: number; completionTokens: number; totalTokens: number };
  output: RunOutputView | undefined;
  error: string | undefined;
}

export const EMPTY_RUN: RunState = {
  runId: undefined,
  agent: undefined,
  status: undefined,
  state: undefined,
  messages: [],
  streamingText: "",
  deltas: 0,
  toolCalls: [],
  pendingApprovals: [],
  usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 },
  output: undefined,
  error: undefined,
};

function upsertCall(calls: ToolCallView[], callId: string, change: Partial<ToolCallView> & Pick<ToolCallView, "name">): ToolCallView[] {
  const index = calls.findIndex((call) => call.callId === callId);
  if (index < 0) return [...calls, { callId, arguments: "", status: "running", ...change }];
  return calls.map((call, i) => (i === index ? { ...call, ...change } : call));
}

/** The tool calls a conversation holds, with their results, for a page that joined late. */
function callsFromMessages(messages: Message[], pending: PendingApprovalView[]): ToolCallView[] {
  const calls: ToolCallView[] = [];
  for (const message of messages) {
    if (message.role === "assistant") {
      for (const call of message.toolCalls ?? []) calls.push({ callId: call.id, name: call.name, arguments: call.arguments, status: "running" });
    } else if (message.role === "tool") {
      const call = calls.find((c) => c.callId === message.toolCallId);
      if (call) Object.assign(call, { status: message.isError ? "failed" : "completed", output: describeContent(message.content) });
    }
  }
  for (const call of calls) if (pending.some((p) => p.callId === call.callId)) call.status = "awaitingApproval";
  return calls;
}

/** Apply one event of the run (a pure function: the client machine's `assign` calls it). */
export function applyRunEvent(run: RunState, event: RunEvent): RunState {
  switch (event.type) {
    case "run.started":
      return { ...EMPTY_RUN, runId: event.data.runId, agent: event.data.agent, status: "running" };
    case "run.snapshot": {
      const s = event.data;
      return {
        ...run,
        runId: s.runId,
        agent: s.agent,
        status: s.status,
        state: s.state,
        messages: s.messages,
        streamingText: s.streamingText,
        toolCalls: callsFromMessages(s.messages, s.pendingApprovals),
        pendingApprovals: s.pendingApprovals,
        usage: s.usage,
        output: s.output ?? undefined,
      };
    }
    case "state.changed":
      return { ...run, state: { value: event.data.value, path: event.data.path }, status: event.data.status };
    case "reply.started":
      return { ...run, streamingText: "" };
    case "text.delta":
      return { ...run, streamingText: run.streamingText + event.data.delta, deltas: run.deltas + 1 };
    case "reasoning.delta":
      // useAgent shows the answer, not the reasoning that led to it (the AI SDK stream carries both).
      return run;
    case "message": {
      const messages = [...run.messages];
      messages[event.data.index] = event.data.message;
      // The streamed text has become the assistant's message.
      return { ...run, messages, streamingText: event.data.message.role === "assistant" ? "" : run.streamingText };
    }
    case "tool.call.started":
      return { ...run, toolCalls: upsertCall(run.toolCalls, event.data.callId, { name: event.data.name, arguments: event.data.arguments, status: "running" }) };
    case "tool.call.completed":
      return { ...run, toolCalls: upsertCall(run.toolCalls, event.data.callId, { name: event.data.name, status: "completed", output: event.data.output }) };
    case "tool.call.failed":
      return { ...run, toolCalls: upsertCall(run.toolCalls, event.data.callId, { name: event.data.name, status: "failed", output: event.data.error }) };
    case "tool.call.denied":
      return { ...run, toolCalls: upsertCall(run.toolCalls, event.data.callId, { name: event.data.name, status: "denied", output: event.data.reason }) };
    case "approval.requested": {
      const pending = [...run.pendingApprovals.filter((p) => p.callId !== event.data.callId), event.data];
      return { ...run, pendingApprovals: pending, toolCalls: upsertCall(run.toolCalls, event.data.callId, { name: event.data.name, arguments: event.data.arguments, status: "awaitingApproval" }) };
    }
    case "approval.decided":
      return { ...run, pendingApprovals: run.pendingApprovals.filter((p) => p.callId !== event.data.callId) };
    case "approval.refused":
      // Nothing changed in the run: a call it refused a decision for is still in pendingApprovals, to be answered again.
      return run;
    case "usage":
      return { ...run, usage: event.data.usage };
    case "run.finished":
      return { ...run, output: event.data.output, status: event.data.output.status, streamingText: "", pendingApprovals: [] };
    case "run.error":
      return { ...run, status: "failed", error: event.data.message, pendingApprovals: [] };
  }
}

export function isFinished(run: RunState): boolean {
  return run.output !== undefined || run.error !== undefined;
}
