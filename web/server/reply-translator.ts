import type { RunEvent } from "../protocol.js";
import type { RunTranslator } from "./translated-stream.js";

/** The streamed parts of a model reply: its reasoning and its text. */
export type PartKind = "reasoning" | "text";

/**
 * What every frontend protocol does with a model reply, whatever its wire: each round opens a step,
 * reasoning and text stream as parts (reasoning closes when the text starts, both when the reply
 * ends or calls a tool), a reply that did not stream is told whole from its message, each tool call
 * is announced once, and the conversation the run started from is not told again. A protocol says
 * how each of those is written and handles the events that are its own (`other`).
 */
export abstract class ReplyTranslator<Chunk> implements RunTranslator<Chunk> {
  private readonly open: Partial<Record<PartKind, string>> = {};
  private textStreamed = false;
  private readonly announced: Set<string>;
  /** True once the response's last chunk was made. */
  ended = false;

  /**
   * `inputMessages`: `message` events below this index are the run's input, not news to the page.
   * `announced`: calls the page heard of in an earlier response (a continuation after approval).
   */
  constructor(
    private readonly inputMessages: number,
    announced: Iterable<string> = [],
  ) {
    this.announced = new Set(announced);
  }

  translate(event: RunEvent): Chunk[] {
    if (this.ended) return [];
    const out: Chunk[] = [];
    switch (event.type) {
      case "reply.started":
        this.closeParts(out);
        this.textStreamed = false;
        out.push(...this.step(event.data.round));
        break;
      case "reasoning.delta":
      case "text.delta": {
        if (event.data.delta === "") break;
        const kind = event.type === "text.delta" ? "text" : "reasoning";
        if (kind === "text") {
          this.close(out, "reasoning");
          this.textStreamed = true;
        }
        const id = (this.open[kind] ??= this.startPart(out, kind));
        out.push(this.partDelta(kind, id, event.data.delta));
        break;
      }
      case "message": {
        const { index, message } = event.data;
        if (index < this.inputMessages || message.role !== "assistant") break;
        this.closeParts(out);
        // A model that did not stream its text (or a reply restored from a checkpoint) says it whole.
        if (!this.textStreamed && message.content) {
          const id = this.startPart(out, "text");
          out.push(this.partDelta("text", id, message.content), ...this.partEnd("text", id));
        }
        for (const call of message.toolCalls ?? []) this.announce(out, call.id, call.name, call.arguments);
        break;
      }
      case "tool.call.started":
        this.announce(out, event.data.callId, event.data.name, event.data.arguments);
        break;
      default:
        this.other(event, out);
    }
    return out;
  }

  abstract finish(why: "awaitingApproval" | "logClosed"): Chunk[];

  /** A new model round (`round` counts from 1). */
  protected abstract step(round: number): Chunk[];
  /** A new part's id, and the chunks that open it. */
  protected abstract partStart(kind: PartKind): { id: string; chunks: Chunk[] };
  protected abstract partDelta(kind: PartKind, id: string, delta: string): Chunk;
  protected abstract partEnd(kind: PartKind, id: string): Chunk[];
  /** A tool call the page has not heard of yet, with its arguments (JSON text, as the model wrote them). */
  protected abstract toolCall(callId: string, name: string, args: string): Chunk[];
  /** The events that are the protocol's own: tool outcomes, approvals, the chart's state, the end. */
  protected abstract other(event: RunEvent, out: Chunk[]): void;

  /** Announce a call once; the reply's reasoning and text are over once it calls a tool. */
  protected announce(out: Chunk[], callId: string, name: string, args: string): void {
    if (this.announced.has(callId)) return;
    this.announced.add(callId);
    this.closeParts(out);
    out.push(...this.toolCall(callId, name, args));
  }

  protected closeParts(out: Chunk[]): void {
    this.close(out, "reasoning");
    this.close(out, "text");
  }

  private startPart(out: Chunk[], kind: PartKind): string {
    const { id, chunks } = this.partStart(kind);
    out.push(...chunks);
    return id;
  }

  private close(out: Chunk[], kind: PartKind): void {
    const id = this.open[kind];
    if (id === undefined) return;
    out.push(...this.partEnd(kind, id));
    delete this.open[kind];
  }
}
