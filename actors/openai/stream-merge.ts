import type { ModelTurn } from "../model-client.js";
import { toUsage, argumentsText, type Chunk, type ToolCallDelta, type WireUsage } from "./openai-wire-schemas.js";
import { ZERO_USAGE } from "../model-client.js";
import { finalizeToolCall, type WireToolCall } from "./tool-call-ids.js";

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
  private readonly calls = new Map<number, WireToolCall>();
  private lastCallKey: number | undefined;
  private usage: WireUsage | undefined;
  private finishReason: string | null = null;
  private serverModel: string | undefined;
  private chunkCount = 0;
  private outputStarted = false;

  /** `onText` receives every non-empty content delta as it arrives. */
  constructor(private readonly onText: (delta: string) => void) {}

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
    for (const choice of chunk.choices ?? []) {
      if ((choice.index ?? 0) !== 0) continue;
      if (choice.finish_reason) this.finishReason = choice.finish_reason;
      const delta = choice.delta;
      if (!delta) continue;
      if (delta.refusal) this.refusal += delta.refusal;
      // Servers use one name or the other; preferring one avoids doubling text if both appear.
      const reasoning = delta.reasoning_content ?? delta.reasoning;
      if (reasoning) this.reasoning += reasoning;
      for (const call of delta.tool_calls ?? []) this.mergeToolCall(call);
      if (delta.content) {
        this.content += delta.content;
        this.outputStarted = true;
        this.onText(delta.content);
      }
    }
  }

  finish(): TurnParts {
    const keys = [...this.calls.keys()].sort((a, b) => a - b);
    const toolCalls = keys
      .map((key) => this.calls.get(key) as WireToolCall)
      // A slot that never got a name, id or argument is noise, not a call.
      .filter((call) => call.name !== "" || call.id !== "" || call.arguments !== "")
      .map(finalizeToolCall);
    const turn: TurnParts = {
      content: this.content,
      toolCalls,
      usage: this.usage ? toUsage(this.usage) : { ...ZERO_USAGE },
      finishReason: this.finishReason,
    };
    if (this.refusal !== "") turn.refusal = this.refusal;
    if (this.reasoning !== "") turn.reasoning = this.reasoning;
    if (!this.usage) turn.usageMissing = true;
    if (this.serverModel !== undefined) turn.serverModel = this.serverModel;
    return turn;
  }

  private mergeToolCall(delta: ToolCallDelta): void {
    const key = this.keyFor(delta);
    let call = this.calls.get(key);
    if (!call) {
      call = { id: "", name: "", arguments: "" };
      this.calls.set(key, call);
    }
    this.lastCallKey = key;
    if (delta.id && call.id === "") call.id = delta.id;
    const fn = delta.function;
    if (fn?.name && call.name === "") call.name = fn.name;
    const args = argumentsText(fn?.arguments);
    if (args !== "") call.arguments += args;
    this.outputStarted = true;
  }

  /**
   * Every recorded server sends `index`; for one that does not, a delta with a new id opens a
   * new call and anything else continues the last one.
   */
  private keyFor(delta: ToolCallDelta): number {
    if (typeof delta.index === "number") return delta.index;
    if (delta.id) {
      for (const [key, call] of this.calls) if (call.id === delta.id) return key;
      return this.calls.size === 0 ? 0 : Math.max(...this.calls.keys()) + 1;
    }
    return this.lastCallKey ?? 0;
  }
}
