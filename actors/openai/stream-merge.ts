import type { ModelTurn } from "../model-client.js";
import { toUsage, usageDistrusted, argumentsText, type Chunk, type ToolCallDelta, type WireUsage } from "./openai-wire-schemas.js";
import { finalToolCall, type WireToolCall } from "./tool-call-ids.js";

/** Everything of a turn but the model name, which the caller knows (it picked the endpoint). */
export type TurnParts = Omit<ModelTurn, "model">;

/**
 * Folds `chat.completion.chunk`s into one turn, the way every server in our recordings needs:
 * - only choice 0 counts (an `n > 1` stream interleaves other choices; we asked for one answer);
 * - chunks without choices are fine (Azure's `prompt_filter_results` first chunk, usage chunks);
 * - tool calls are keyed by `index`, which may start at 1; `id`/`name` are taken from the first
 *   delta that has a non-empty one, so Qwen's repeated `id: ""` and GLM's `name: ""` do not erase
 *   them; arguments are concatenated, whether they come whole or in fragments;
 * - usage is the last non-null `usage` seen: on the finish chunk (Groq, DeepSeek), on a separate
 *   `choices: []` chunk (OpenAI, xAI, vLLM) or nowhere (then zeros, flagged `usageMissing`).
 */
export class StreamMerger {
  private content = "";
  private refusal = "";
  private reasoning = "";
  /**
   * The calls in the order they opened. An array rather than a Map keyed by index: a turn has
   * one call or a handful, and a short scan costs less than hashing on every delta.
   */
  private readonly calls: ToolCallSlot[] = [];
  private lastCall: ToolCallSlot | undefined;
  private usage: WireUsage | undefined;
  private finishReason: string | null = null;
  private serverModel: string | undefined;
  private chunkCount = 0;
  private outputStarted = false;

  /**
   * `onText` receives every non-empty content delta as it arrives; `onArguments`, when given, a
   * call's arguments so far after each fragment; `onReasoning` every reasoning delta (which is not
   * output: a retry after one repeats nothing the caller kept).
   */
  constructor(
    private readonly onText: (delta: string) => void,
    private readonly onArguments?: (call: { index: number; name: string; arguments: string }) => void,
    private readonly onReasoning?: (delta: string) => void,
  ) {}

  /** True once text or a tool-call delta reached the caller: from then on a retry would duplicate output. */
  get delivered(): boolean {
    return this.outputStarted;
  }

  /** Chunks merged so far. */
  get chunks(): number {
    return this.chunkCount;
  }

  /** True once choice 0 carried a `finish_reason`. */
  get finished(): boolean {
    return this.finishReason !== null;
  }

  push(chunk: Chunk): void {
    this.chunkCount += 1;
    if (chunk.model && this.serverModel === undefined) this.serverModel = chunk.model;
    if (chunk.usage) this.usage = chunk.usage;
    const choices = chunk.choices;
    if (!choices) return;
    // Indexed loops here and below: this runs for every chunk of every stream.
    for (let i = 0; i < choices.length; i++) {
      const choice = choices[i] as (typeof choices)[number];
      if ((choice.index ?? 0) !== 0) continue;
      if (choice.finish_reason) this.finishReason = choice.finish_reason;
      const delta = choice.delta;
      if (!delta) continue;
      if (delta.refusal) this.refusal += delta.refusal;
      // Servers use one name or the other; preferring one avoids doubling text if both appear.
      const reasoning = delta.reasoning_content ?? delta.reasoning;
      if (reasoning) {
        this.reasoning += reasoning;
        this.onReasoning?.(reasoning);
      }
      const calls = delta.tool_calls;
      if (calls) for (let c = 0; c < calls.length; c++) this.mergeToolCall(calls[c] as ToolCallDelta);
      if (delta.content) {
        this.content += delta.content;
        this.outputStarted = true;
        this.onText(delta.content);
      }
    }
  }

  finish(): TurnParts {
    const slots = this.calls;
    // Servers open calls in index order; only a stream that does not needs sorting.
    let ordered = true;
    for (let i = 1; i < slots.length; i++) if ((slots[i] as ToolCallSlot).key < (slots[i - 1] as ToolCallSlot).key) ordered = false;
    const sorted = ordered ? slots : [...slots].sort((a, b) => a.key - b.key);
    const toolCalls: TurnParts["toolCalls"] = [];
    for (let i = 0; i < sorted.length; i++) {
      const call = sorted[i] as ToolCallSlot;
      // A slot that never got a name, id or argument is noise, not a call.
      if (call.name !== "" || call.id !== "" || call.arguments !== "") toolCalls.push(finalToolCall(call.id, call.name, call.arguments));
    }
    const turn: TurnParts = {
      content: this.content,
      toolCalls,
      usage: toUsage(this.usage),
      finishReason: this.finishReason,
    };
    if (this.refusal !== "") turn.refusal = this.refusal;
    if (this.reasoning !== "") turn.reasoning = this.reasoning;
    if (!this.usage || usageDistrusted(this.usage)) turn.usageMissing = true;
    if (this.serverModel !== undefined) turn.serverModel = this.serverModel;
    return turn;
  }

  private mergeToolCall(delta: ToolCallDelta): void {
    const call = this.slotFor(delta);
    this.lastCall = call;
    if (delta.id && call.id === "") call.id = delta.id;
    const fn = delta.function;
    if (fn?.name && call.name === "") call.name = fn.name;
    const args = argumentsText(fn?.arguments);
    if (args !== "") {
      call.arguments += args;
      this.onArguments?.({ index: call.key, name: call.name, arguments: call.arguments });
    }
    this.outputStarted = true;
  }

  /**
   * The call a delta continues, opened if new. Every recorded server sends `index`; for one that
   * does not, a delta with a new id opens a new call and anything else continues the last one.
   */
  private slotFor(delta: ToolCallDelta): ToolCallSlot {
    const slots = this.calls;
    let key: number;
    if (typeof delta.index === "number") {
      key = delta.index;
    } else if (delta.id) {
      for (let i = 0; i < slots.length; i++) if ((slots[i] as ToolCallSlot).id === delta.id) return slots[i] as ToolCallSlot;
      // A new id: the next key after the highest so far.
      key = slots.length === 0 ? 0 : -Infinity;
      for (let i = 0; i < slots.length; i++) key = Math.max(key, (slots[i] as ToolCallSlot).key + 1);
    } else {
      if (this.lastCall) return this.lastCall;
      key = 0;
    }
    for (let i = 0; i < slots.length; i++) if ((slots[i] as ToolCallSlot).key === key) return slots[i] as ToolCallSlot;
    const slot: ToolCallSlot = { key, id: "", name: "", arguments: "" };
    slots.push(slot);
    return slot;
  }
}

/** One call as it is assembled from deltas, under the key its deltas name. */
interface ToolCallSlot extends WireToolCall {
  key: number;
}
