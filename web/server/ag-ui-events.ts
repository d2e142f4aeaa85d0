import type { PendingApproval } from "../../machines/contract/approvals.js";
import type { ChartPosition, RunEvent, RunStatus } from "../protocol.js";
import { failureText } from "./chat-runs.js";
import { ReplyTranslator, type PartKind } from "./reply-translator.js";

/**
 * The AG-UI events (protocol 1.0) a jianmu run is told as: the subset of `@ag-ui/core`'s events
 * this server sends, written here so the library does not depend on it (the tests read every
 * event with `@ag-ui/client`, which checks their order).
 */
export type AgUiEvent =
  | { type: "RUN_STARTED"; threadId: string; runId: string }
  | { type: "RUN_FINISHED"; threadId: string; runId: string; result?: string | null; outcome: { type: "success" } | { type: "interrupt"; interrupts: AgUiInterrupt[] } }
  | { type: "RUN_ERROR"; message: string; code?: string }
  | { type: "STEP_STARTED" | "STEP_FINISHED"; stepName: string }
  | { type: "TEXT_MESSAGE_START"; messageId: string; role: "assistant" }
  | { type: "TEXT_MESSAGE_CONTENT" | "REASONING_MESSAGE_CONTENT"; messageId: string; delta: string }
  | { type: "TEXT_MESSAGE_END" | "REASONING_START" | "REASONING_MESSAGE_END" | "REASONING_END"; messageId: string }
  | { type: "REASONING_MESSAGE_START"; messageId: string; role: "reasoning" }
  | { type: "TOOL_CALL_START"; toolCallId: string; toolCallName: string; parentMessageId?: string }
  | { type: "TOOL_CALL_ARGS"; toolCallId: string; delta: string }
  | { type: "TOOL_CALL_END"; toolCallId: string }
  | { type: "TOOL_CALL_RESULT"; messageId: string; toolCallId: string; content: string; role: "tool" }
  | { type: "STATE_SNAPSHOT"; snapshot: { jianmu: ChartPosition & { status: RunStatus } } };

/** A call waiting for a person, as AG-UI's interrupt: answered by a resume entry with its id. */
export interface AgUiInterrupt {
  id: string;
  reason: "tool_approval";
  message: string;
  toolCallId: string;
  responseSchema: Record<string, unknown>;
  expiresAt?: string;
}

/** What a resume entry's payload holds for a tool approval. */
export const APPROVAL_RESPONSE_SCHEMA = {
  type: "object",
  properties: { approved: { type: "boolean" }, editedArgs: { type: "object" }, reason: { type: "string" } },
  required: ["approved"],
} as const;

/** Ids this server gives messages and interrupts: `jm:<run id>:<what>`, so a later request names the run. */
export function serverId(runId: string, what: string): string {
  return `jm:${runId}:${what}`;
}

/** The run a server-given id names, or undefined for an id the page made. */
export function runIdOf(id: string): string | undefined {
  const match = /^jm:([^:]+):(.+)$/.exec(id);
  return match?.[1];
}

/** The call an interrupt id names. */
export function callIdOf(interruptId: string): string | undefined {
  return /^jm:[^:]+:(.+)$/.exec(interruptId)?.[1];
}

export interface AgUiTranslatorOptions {
  runId: string;
  /** The AG-UI run (and thread) the page started: RUN_FINISHED repeats them. */
  agUi: { threadId: string; runId: string };
  inputMessages: number;
  /** Calls the page heard of in an earlier AG-UI run (a resume). */
  announced?: Iterable<string>;
  /** The run's waiting calls now: the interrupts a parked run ends with. */
  pendingApprovals: () => readonly PendingApproval[];
}

/**
 * Turns a run's events into AG-UI events: each model round a step and an assistant message (text
 * and reasoning streamed, tool calls started, given their arguments and ended), each tool outcome a
 * result, the chart's state a state snapshot (`{ jianmu: { value, path, status } }`). A run that
 * parks for approval ends the AG-UI run with an interrupt outcome, one interrupt per waiting call.
 */
export class AgUiTranslator extends ReplyTranslator<AgUiEvent> {
  /** The round's assistant message: its text, reasoning and tool calls belong to it. */
  private messageId: string | undefined;
  private stepName: string | undefined;

  constructor(private readonly options: AgUiTranslatorOptions) {
    super(options.inputMessages, options.announced);
  }

  finish(why: "awaitingApproval" | "logClosed"): AgUiEvent[] {
    const out: AgUiEvent[] = [];
    if (why === "awaitingApproval") this.end(out, this.interrupted());
    else this.fail(out, "the server let go of the run before it ended; it goes on, and a later request finds it", "stream_ended");
    return out;
  }

  protected step(round: number): AgUiEvent[] {
    const finished = this.stepName;
    this.stepName = `round ${round}`;
    this.messageId = serverId(this.options.runId, `r${round}`);
    return [...(finished ? [{ type: "STEP_FINISHED", stepName: finished } as const] : []), { type: "STEP_STARTED", stepName: this.stepName }];
  }

  protected partStart(kind: PartKind): { id: string; chunks: AgUiEvent[] } {
    this.messageId ??= serverId(this.options.runId, "r0");
    if (kind === "text") return { id: this.messageId, chunks: [{ type: "TEXT_MESSAGE_START", messageId: this.messageId, role: "assistant" }] };
    const id = `${this.messageId}.reasoning`;
    return { id, chunks: [{ type: "REASONING_START", messageId: id }, { type: "REASONING_MESSAGE_START", messageId: id, role: "reasoning" }] };
  }

  protected partDelta(kind: PartKind, id: string, delta: string): AgUiEvent {
    return { type: kind === "text" ? "TEXT_MESSAGE_CONTENT" : "REASONING_MESSAGE_CONTENT", messageId: id, delta };
  }

  protected partEnd(kind: PartKind, id: string): AgUiEvent[] {
    return kind === "text" ? [{ type: "TEXT_MESSAGE_END", messageId: id }] : [{ type: "REASONING_MESSAGE_END", messageId: id }, { type: "REASONING_END", messageId: id }];
  }

  protected toolCall(callId: string, name: string, args: string): AgUiEvent[] {
    return [
      { type: "TOOL_CALL_START", toolCallId: callId, toolCallName: name, ...(this.messageId ? { parentMessageId: this.messageId } : {}) },
      ...(args !== "" ? [{ type: "TOOL_CALL_ARGS", toolCallId: callId, delta: args } as const] : []),
      { type: "TOOL_CALL_END", toolCallId: callId },
    ];
  }

  protected other(event: RunEvent, out: AgUiEvent[]): void {
    switch (event.type) {
      case "approval.requested":
        this.announce(out, event.data.callId, event.data.name, event.data.arguments);
        break;
      case "tool.call.completed":
        out.push(this.result(event.data.callId, event.data.output));
        break;
      case "tool.call.failed":
        out.push(this.result(event.data.callId, `error: ${event.data.error}`));
        break;
      case "tool.call.denied":
        out.push(this.result(event.data.callId, `denied: ${event.data.reason}`));
        break;
      case "state.changed": {
        const { status, ...position } = event.data;
        out.push({ type: "STATE_SNAPSHOT", snapshot: { jianmu: { ...position, status } } });
        if (status === "awaitingApproval") this.end(out, this.interrupted());
        break;
      }
      case "run.finished": {
        const { output } = event.data;
        if (output.status === "succeeded") this.end(out, { type: "success" }, output.finalAnswer);
        else this.fail(out, failureText(output), output.termination?.reason ?? "failed");
        break;
      }
      case "run.error":
        this.fail(out, event.data.message, "machine_error");
        break;
      case "approval.refused":
        // An answer the run refused (an edit only the worker could check): the call waits again, so the person is asked again.
        if (this.options.pendingApprovals().some((call) => call.callId === event.data.callId)) this.end(out, this.interrupted());
        break;
      default:
        // run.started, run.snapshot, approval.decided, usage: nothing AG-UI carries for them.
        break;
    }
  }

  private interrupted(): Extract<AgUiEvent, { type: "RUN_FINISHED" }>["outcome"] {
    return { type: "interrupt", interrupts: this.options.pendingApprovals().map((call) => this.interrupt(call)) };
  }

  private end(out: AgUiEvent[], outcome: Extract<AgUiEvent, { type: "RUN_FINISHED" }>["outcome"], result?: string | null): void {
    if (this.ended) return;
    this.closeParts(out);
    if (this.stepName) out.push({ type: "STEP_FINISHED", stepName: this.stepName });
    out.push({ type: "RUN_FINISHED", threadId: this.options.agUi.threadId, runId: this.options.agUi.runId, ...(result !== undefined ? { result } : {}), outcome });
    this.ended = true;
  }

  private fail(out: AgUiEvent[], message: string, code: string): void {
    this.closeParts(out);
    // RUN_ERROR ends the run by itself: open steps are not closed after it.
    out.push({ type: "RUN_ERROR", message, code });
    this.ended = true;
  }

  private interrupt(call: PendingApproval): AgUiInterrupt {
    return {
      id: serverId(this.options.runId, call.callId),
      reason: "tool_approval",
      message: call.reason ?? `${call.name} waits for approval`,
      toolCallId: call.callId,
      responseSchema: APPROVAL_RESPONSE_SCHEMA,
      ...(call.deadline !== undefined ? { expiresAt: new Date(call.deadline).toISOString() } : {}),
    };
  }

  private result(callId: string, content: string): AgUiEvent {
    return { type: "TOOL_CALL_RESULT", messageId: serverId(this.options.runId, `t${callId}`), toolCallId: callId, content, role: "tool" };
  }
}
