import { invalidResponse } from "./model-failure.js";
import type { StreamReader } from "./openai-attempt.js";
import { describeWireIssue } from "./openai-wire-schemas.js";
import { readResponse, serverFailure, type ReplySource } from "./responses-read.js";
import { parseOutputItem, parseResponseObject, type OutputItem, type ResponseObject } from "./responses-wire-schemas.js";
import type { TurnParts } from "./stream-merge.js";

/** A function call as its arguments stream in, under its item id. */
interface CallSlot {
  itemId: string;
  outputIndex: number;
  name: string;
  arguments: string;
}

type StreamEvent = Record<string, unknown>;

/**
 * Reads a Responses API stream (`stream: true`): named events, not chunks. The deltas reach the
 * caller as they come (text as `onText`, reasoning summaries and reasoning text as `onReasoning`,
 * a call's arguments so far as `onArguments`); the turn itself is read from the terminal event's
 * whole response (`response.completed`, or `response.incomplete` when the reply was cut short),
 * falling back on the `output_item.done` items when a server leaves that response's output empty.
 * `response.failed` and `error` events end the attempt as the server's own failure.
 */
export class ResponsesStreamReader implements StreamReader {
  private readonly calls: CallSlot[] = [];
  /**
   * Finished items by output index, as sent (a Map: the index is the server's, and may be anything).
   * Read, and checked, only when the terminal event comes without its output.
   */
  private done: Map<number, unknown> | undefined;
  private final: ResponseObject | undefined;
  private eventCount = 0;
  private outputStarted = false;
  /** The summary part the last reasoning delta belonged to: a new one starts after a blank line. */
  private reasoningPart: string | undefined;

  constructor(
    private readonly source: ReplySource,
    private readonly onText: (delta: string) => void,
    private readonly onReasoning: (delta: string) => void,
    private readonly onArguments?: (call: { index: number; name: string; arguments: string }) => void,
  ) {}

  /** True once text or a function call reached the caller: from then on a retry would duplicate output. */
  get delivered(): boolean {
    return this.outputStarted;
  }

  /** True once the terminal event arrived. */
  get finished(): boolean {
    return this.final !== undefined;
  }

  /** Events read so far. */
  get count(): number {
    return this.eventCount;
  }

  push(raw: unknown): void {
    this.eventCount += 1;
    if (typeof raw !== "object" || raw === null || typeof (raw as StreamEvent)["type"] !== "string") {
      throw invalidResponse("a stream event is malformed: it has no type", this.outputStarted);
    }
    const event = raw as StreamEvent;
    switch (event["type"]) {
      case "response.output_text.delta": {
        const delta = this.delta(event);
        if (delta === "") return;
        this.outputStarted = true;
        this.onText(delta);
        return;
      }
      case "response.reasoning_summary_text.delta":
      case "response.reasoning_text.delta":
        return this.reasoning(event);
      case "response.output_item.added":
        return this.openCall(event);
      case "response.function_call_arguments.delta":
        return this.callArguments(event);
      case "response.output_item.done":
        return this.itemDone(event);
      case "response.completed":
      case "response.incomplete":
        return this.terminal(event);
      case "response.failed": {
        const response = event["response"];
        const error = typeof response === "object" && response !== null ? (response as StreamEvent)["error"] : undefined;
        throw serverFailure(typeof error === "object" && error !== null ? (error as { code?: string; message?: string }) : undefined, this.outputStarted);
      }
      case "error":
        throw serverFailure({ code: textField(event, "code"), message: textField(event, "message") }, this.outputStarted);
      default:
        // Lifecycle and part events (created, in_progress, content_part.*, *.done) add nothing the
        // terminal event does not carry.
        return;
    }
  }

  finish(): TurnParts {
    const final = this.final as ResponseObject;
    if ((final.output && final.output.length > 0) || this.done === undefined) return readResponse(final, this.source);
    const items: OutputItem[] = [];
    for (const [, raw] of [...this.done.entries()].sort((a, b) => a[0] - b[0])) {
      const parsed = parseOutputItem(raw);
      if (parsed === undefined) continue;
      if (!parsed.success) throw invalidResponse(`a stream event is malformed: response.output_item.done.item.${describeWireIssue(parsed.error)}`, this.outputStarted);
      items.push(parsed.data);
    }
    return readResponse(final, this.source, items);
  }

  private delta(event: StreamEvent): string {
    const delta = event["delta"];
    if (typeof delta !== "string") throw invalidResponse(`a stream event is malformed: ${String(event["type"])}.delta: expected a string`, this.outputStarted);
    return delta;
  }

  private reasoning(event: StreamEvent): void {
    const delta = this.delta(event);
    if (delta === "") return;
    const part = `${String(event["item_id"])}:${String(event["summary_index"] ?? event["content_index"] ?? 0)}`;
    // The turn's reasoning text joins the parts with a blank line; the deltas add up to it.
    if (this.reasoningPart !== undefined && this.reasoningPart !== part) this.onReasoning("\n\n");
    this.reasoningPart = part;
    this.onReasoning(delta);
  }

  private openCall(event: StreamEvent): void {
    const item = event["item"];
    if (typeof item !== "object" || item === null || (item as StreamEvent)["type"] !== "function_call") return;
    const call = item as StreamEvent;
    this.calls.push({ itemId: textField(call, "id") ?? "", outputIndex: indexOf(event), name: textField(call, "name") ?? "", arguments: "" });
    this.outputStarted = true;
  }

  private callArguments(event: StreamEvent): void {
    const delta = this.delta(event);
    const itemId = textField(event, "item_id");
    const outputIndex = indexOf(event);
    let index = this.calls.findIndex((slot) => (itemId !== undefined && slot.itemId !== "" ? slot.itemId === itemId : slot.outputIndex === outputIndex));
    if (index === -1) {
      // A server that sends no `output_item.added` first: the call opens with its first fragment.
      index = this.calls.push({ itemId: itemId ?? "", outputIndex, name: "", arguments: "" }) - 1;
    }
    const slot = this.calls[index] as CallSlot;
    slot.arguments += delta;
    this.outputStarted = true;
    this.onArguments?.({ index, name: slot.name, arguments: slot.arguments });
  }

  private itemDone(event: StreamEvent): void {
    this.done ??= new Map();
    this.done.set(indexOf(event, this.done.size), event["item"]);
  }

  private terminal(event: StreamEvent): void {
    const parsed = parseResponseObject(event["response"]);
    if (!parsed.success) throw invalidResponse(`a stream event is malformed: ${String(event["type"])}.response.${describeWireIssue(parsed.error)}`, this.outputStarted);
    this.final = parsed.data;
  }
}

function textField(event: StreamEvent, key: string): string | undefined {
  const value = event[key];
  return typeof value === "string" ? value : undefined;
}

function indexOf(event: StreamEvent, fallback = 0): number {
  const value = event["output_index"];
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0 ? value : fallback;
}
