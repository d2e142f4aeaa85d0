import type { ChartPosition, RunEvent, RunOutputView, RunStatus } from "../protocol.js";
import type { Usage } from "../../actors/model-client.js";
import { failureText } from "./chat-runs.js";
import { ReplyTranslator, type PartKind } from "./reply-translator.js";

/**
 * The chunks of the AI SDK's UI message stream (protocol v1, `x-vercel-ai-ui-message-stream: v1`)
 * that a jianmu run is told as: the subset of `ai`'s `UIMessageChunk` this server sends, written
 * here so the library does not depend on `ai` (the tests parse every chunk with `ai`'s own schema).
 */
export type UIChunk =
  | { type: "start"; messageId: string; messageMetadata: JianmuMessageMetadata }
  | { type: "start-step" }
  | { type: "finish-step" }
  | { type: "text-start" | "text-end" | "reasoning-start" | "reasoning-end"; id: string }
  | { type: "text-delta" | "reasoning-delta"; id: string; delta: string }
  | { type: "tool-input-available"; toolCallId: string; toolName: string; input: unknown }
  | { type: "tool-approval-request"; approvalId: string; toolCallId: string }
  | { type: "tool-output-available"; toolCallId: string; output: unknown }
  | { type: "tool-output-error"; toolCallId: string; errorText: string }
  | { type: "tool-output-denied"; toolCallId: string }
  | { type: "data-jianmu-state"; id: string; data: ChartPosition & { status: RunStatus } }
  | { type: "message-metadata"; messageMetadata: JianmuMessageMetadata }
  | { type: "error"; errorText: string }
  | { type: "finish"; finishReason: "stop" | "tool-calls" | "error" | "other"; messageMetadata?: JianmuMessageMetadata };

/** What the assistant message's `metadata` holds: the run behind it, its usage, how it ended. */
export interface JianmuMessageMetadata {
  runId?: string;
  agent?: string;
  usage?: Usage;
  output?: RunOutputView;
}

export interface UIChunkTranslatorOptions {
  runId: string;
  /** `message` events below this index are the run's input (the conversation so far): not news to the page. */
  inputMessages: number;
  /** Calls whose approval the page answered: a rejection of one shows as denied, not as an error. */
  answeredApprovals?: Iterable<string>;
  /** Calls the page heard of in an earlier response. */
  announced?: Iterable<string>;
}

/**
 * Turns a run's events (web/protocol.ts) into UI message chunks, one assistant message per run:
 * each model round a step, its reasoning and text as parts, each tool call a tool part that moves
 * from input to approval to output, the chart's state a `data-jianmu-state` part kept up to date.
 * When the run parks for approval the message ends (`finish`, reason `tool-calls`): the page's
 * answer comes back in its next request, which continues the same message.
 */
export class UIChunkTranslator extends ReplyTranslator<UIChunk> {
  private parts = 0;
  private stepOpen = false;
  private readonly approvals: Set<string>;

  constructor(private readonly options: UIChunkTranslatorOptions) {
    super(options.inputMessages, options.announced);
    this.approvals = new Set(options.answeredApprovals ?? []);
  }

  /** End the message now: the run waits for a person (`tool-calls`), or the log closed before the run's end. */
  finish(why: "awaitingApproval" | "logClosed"): UIChunk[] {
    return this.end([], why === "awaitingApproval" ? "tool-calls" : "other");
  }

  protected step(): UIChunk[] {
    const wasOpen = this.stepOpen;
    this.stepOpen = true;
    return [...(wasOpen ? [{ type: "finish-step" } as const] : []), { type: "start-step" }];
  }

  protected partStart(kind: PartKind): { id: string; chunks: UIChunk[] } {
    const id = `${this.options.runId}.${kind}.${++this.parts}`;
    return { id, chunks: [{ type: `${kind}-start`, id }] };
  }

  protected partDelta(kind: PartKind, id: string, delta: string): UIChunk {
    return { type: `${kind}-delta`, id, delta };
  }

  protected partEnd(kind: PartKind, id: string): UIChunk[] {
    return [{ type: `${kind}-end`, id }];
  }

  protected toolCall(callId: string, name: string, args: string): UIChunk[] {
    return [{ type: "tool-input-available", toolCallId: callId, toolName: name, input: parseArguments(args) }];
  }

  protected other(event: RunEvent, out: UIChunk[]): void {
    switch (event.type) {
      case "approval.requested":
        this.announce(out, event.data.callId, event.data.name, event.data.arguments);
        this.approvals.add(event.data.callId);
        out.push({ type: "tool-approval-request", approvalId: event.data.callId, toolCallId: event.data.callId });
        break;
      case "tool.call.completed":
        out.push({ type: "tool-output-available", toolCallId: event.data.callId, output: event.data.output });
        break;
      case "tool.call.failed":
        out.push({ type: "tool-output-error", toolCallId: event.data.callId, errorText: event.data.error });
        break;
      case "tool.call.denied":
        // A person's "no" is the AI SDK's denied state; a guard's refusal has no approval to show, so its reason is the error.
        out.push(this.approvals.has(event.data.callId) ? { type: "tool-output-denied", toolCallId: event.data.callId } : { type: "tool-output-error", toolCallId: event.data.callId, errorText: `denied: ${event.data.reason}` });
        break;
      case "state.changed": {
        const { status, ...position } = event.data;
        out.push({ type: "data-jianmu-state", id: `${this.options.runId}.state`, data: { ...position, status } });
        if (status === "awaitingApproval") this.end(out, "tool-calls");
        break;
      }
      case "usage":
        out.push({ type: "message-metadata", messageMetadata: { usage: event.data.usage } });
        break;
      case "run.finished": {
        const { output } = event.data;
        if (output.status !== "succeeded") out.push({ type: "error", errorText: failureText(output) });
        this.end(out, output.status === "succeeded" ? "stop" : "error", { usage: output.usage, output });
        break;
      }
      case "run.error":
        out.push({ type: "error", errorText: event.data.message });
        this.end(out, "error");
        break;
      default:
        // run.started, run.snapshot, approval.decided: the page already knows (the message's id is the run's; it sent the decision).
        // approval.refused: useChat's answers carry no edits, the one kind of answer a run refuses after the handler let it through.
        break;
    }
  }

  private end(out: UIChunk[], reason: "stop" | "tool-calls" | "error" | "other", metadata?: JianmuMessageMetadata): UIChunk[] {
    if (this.ended) return out;
    this.closeParts(out);
    if (this.stepOpen) out.push({ type: "finish-step" });
    this.stepOpen = false;
    out.push({ type: "finish", finishReason: reason, ...(metadata ? { messageMetadata: metadata } : {}) });
    this.ended = true;
    return out;
  }
}

/** A call's arguments as the object the model meant; text that is not JSON stays text (the tool refuses it and says why). */
function parseArguments(args: string): unknown {
  try {
    return JSON.parse(args);
  } catch {
    return args;
  }
}
