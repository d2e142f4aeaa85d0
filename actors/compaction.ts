import { human, system, type Message } from "./messages.js";
import { describeContent } from "./content-parts.js";
import { ZERO_USAGE, type ModelCallEvent, type ModelClient, type ModelRequest, type UnreportedSpend, type Usage } from "./model-client.js";
import { beginBudgetedCall, type BudgetedCall } from "./call-meter.js";
import { fromReportingPromise } from "./reporting-promise.js";
import { asSpendError, plusUnreported, withLost, type SpendInput } from "./spend.js";
import { promptTokens } from "./token-count.js";

/**
 * Compaction of a conversation that no longer fits `config.context.maxTokens`. The machine's
 * `Compacting` state invokes the actor below; the span logic is pure and exported, so tests and
 * the model-based helpers compute exactly what the actor would.
 *
 * What is never compacted: the system messages at the start, the first user message (the task),
 * and the last `keepLast` messages. An assistant message that called tools and the tool messages
 * answering it form one unit: it is kept or removed whole, since chat APIs reject a tool result
 * whose call is gone (and a call without its result).
 */

export type CompactionStrategy = "trim" | "summarize";

export interface CompactionInput {
  strategy: CompactionStrategy;
  messages: Message[];
  maxTokens: number;
  keepLast: number;
  /** Tokens the request adds besides the messages (system prompt, tool schemas). */
  overhead: number;
  /** The model that writes the summary (the agent's, when unset). */
  model?: string;
  timeoutMs?: number;
  /** With a budget: what the summary may spend (actors/spend.ts); it counts like any model call. */
  spend?: SpendInput;
  /**
   * A fork waiting on the summary it was forked at: set on the fork's saved input (machines/persistence/log/fork.ts),
   * which the summary restarts from. Asked again, it was never the fork's to count.
   */
  forkPoint?: true;
}

export interface CompactionSize {
  messages: number;
  tokens: number;
}

export interface CompactionOutput {
  messages: Message[];
  before: CompactionSize;
  after: CompactionSize;
  /** What summarizing cost (zero for trimming): it counts toward the run's token budget. */
  usage: Usage;
  /** The model that wrote the summary (its price gives the summary's cost). */
  model?: string;
  /** What the summary's failed attempts may have been billed (see `ModelTurn.unreported`). */
  unreported?: UnreportedSpend;
}

/** Marks the message that stands for a summarized span (a later compaction may summarize it again). */
export const SUMMARY_PREFIX = "Summary of the earlier conversation (the full messages were compacted to save space):\n";

/** The half-open range of messages that may be compacted: after the protected head, before the kept tail. */
export function compactableSpan(messages: readonly Message[], keepLast: number): { start: number; end: number } {
  let start = 0;
  while (start < messages.length && messages[start]!.role === "system") start++;
  const firstUser = messages.findIndex((m) => m.role === "user");
  if (firstUser >= start) start = firstUser + 1;
  let end = Math.max(start, messages.length - keepLast);
  // The tail must not begin with tool results whose call would be compacted away.
  while (end > start && messages[end]?.role === "tool") end--;
  return { start, end };
}

/** The span split into units: an assistant tool call with its results, or a single message. */
function unitsOf(messages: readonly Message[], start: number, end: number): { start: number; end: number }[] {
  const units: { start: number; end: number }[] = [];
  let i = start;
  while (i < end) {
    let j = i + 1;
    if (messages[i]!.role === "assistant") while (j < end && messages[j]!.role === "tool") j++;
    units.push({ start: i, end: j });
    i = j;
  }
  return units;
}

/** Whether the next prompt is over the limit and there is something compaction could remove. */
export function needsCompaction(messages: readonly Message[], limit: { maxTokens: number; keepLast: number }, overhead: number): boolean {
  const span = compactableSpan(messages, limit.keepLast);
  return span.end > span.start && promptTokens(messages, overhead) > limit.maxTokens;
}

/** Drop whole units from the oldest end of the span until the prompt fits (or the span is empty). */
export function trimMessages(messages: readonly Message[], limit: { maxTokens: number; keepLast: number }, overhead: number): Message[] {
  const span = compactableSpan(messages, limit.keepLast);
  const units = unitsOf(messages, span.start, span.end);
  let total = promptTokens(messages, overhead);
  let cut = span.start;
  for (const unit of units) {
    if (total <= limit.maxTokens) break;
    total -= promptTokens(messages.slice(unit.start, unit.end), -3);
    cut = unit.end;
  }
  return [...messages.slice(0, span.start), ...messages.slice(cut)];
}

/** Replace the whole span by one summary message. */
export function replaceSpan(messages: readonly Message[], keepLast: number, summary: string): Message[] {
  const span = compactableSpan(messages, keepLast);
  return [...messages.slice(0, span.start), human(`${SUMMARY_PREFIX}${summary}`), ...messages.slice(span.end)];
}

const SUMMARY_INSTRUCTIONS = [
  "You compress the middle of a conversation between a user, an assistant and its tools, so the assistant can continue the task with less context.",
  "Write a concise summary that keeps every fact, number, name, decision, tool result and open question the assistant may still need. Leave out pleasantries.",
  "Reply with the summary only.",
].join("\n");

/** The span as plain text for the summarizer (tool calls and results included). */
function transcript(messages: readonly Message[]): string {
  return messages
    .map((m) => {
      if (m.role === "assistant") {
        const calls = (m.toolCalls ?? []).map((c) => `[called ${c.name}(${c.arguments})]`).join(" ");
        return `assistant: ${[m.content ?? "", calls].filter((part) => part !== "").join(" ")}`;
      }
      // An image or file in the span is named, not seen: the summarizer gets text only.
      if (m.role === "tool") return `tool ${m.name ?? m.toolCallId} returned: ${describeContent(m.content)}`;
      return `${m.role}: ${describeContent(m.content)}`;
    })
    .join("\n");
}

function sizeOf(messages: readonly Message[], overhead: number): CompactionSize {
  return { messages: messages.length, tokens: promptTokens(messages, overhead) };
}

/** A summary the model wrote, and what writing it cost. */
export interface Summary {
  text: string;
  usage: Usage;
}

/**
 * The result of compacting, given the summary when the strategy is "summarize". Pure: the actor below
 * and the model-based helpers (which play the summarizer's part) both build their output with it.
 */
export function compactWith(input: CompactionInput, summary?: Summary): CompactionOutput {
  const before = sizeOf(input.messages, input.overhead);
  const messages =
    input.strategy === "trim" || !summary
      ? trimMessages(input.messages, input, input.overhead)
      : replaceSpan(input.messages, input.keepLast, summary.text.trim() || "(the summarizer returned nothing)");
  return { messages, before, after: sizeOf(messages, input.overhead), usage: summary?.usage ?? ZERO_USAGE };
}

/** What the summarizer is asked: the instructions, and the compacted span as a transcript. */
export function summaryRequest(input: CompactionInput): ModelRequest {
  const span = compactableSpan(input.messages, input.keepLast);
  return {
    messages: [system(SUMMARY_INSTRUCTIONS), human(transcript(input.messages.slice(span.start, span.end)))],
    tools: [],
    ...(input.model !== undefined ? { model: input.model } : {}),
    ...(input.timeoutMs !== undefined ? { timeoutMs: input.timeoutMs } : {}),
  };
}

/** The `compaction` actor: trims, or asks the model for a summary (its usage is returned for the budget). */
export function createCompactionActor(deps: { modelClient: ModelClient }) {
  return fromReportingPromise<CompactionOutput, CompactionInput>(async ({ input, signal, self, again }) => {
    if (input.strategy === "trim") return compactWith(input);
    const request = summaryRequest(input);
    let spent: BudgetedCall | undefined;
    try {
      // With a budget: a lost summary asked again counts first, the summary is capped by what is left
      // (over budget none is asked for: a SpendLimitError), and metered in case the run ends meanwhile.
      if (input.spend) spent = beginBudgetedCall(self, "compaction", request, input.spend, deps.modelClient.model, { again, forkPoint: input.forkPoint });
      const meter = spent?.meter;
      const options = meter ? { signal, onEvent: (event: ModelCallEvent) => meter.heard(event) } : { signal };
      const turn = await deps.modelClient.complete(spent?.request ?? request, options);
      const unreported = spent?.lost ? plusUnreported(turn.unreported, spent.lost) : turn.unreported;
      return { ...compactWith(input, { text: turn.content, usage: turn.usage }), model: turn.model, ...(unreported ? { unreported } : {}) };
    } catch (error) {
      throw withLost(asSpendError(error), spent?.lost);
    } finally {
      spent?.release();
    }
  });
}
