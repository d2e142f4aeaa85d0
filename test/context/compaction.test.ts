import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { compactableSpan, needsCompaction, SUMMARY_PREFIX, trimMessages } from "../../actors/compaction.js";
import { ai, human, system, toolMessage, type Message } from "../../actors/messages.js";
import { promptTokens } from "../../actors/token-count.js";
import type { PersistedAgent } from "../../machines/persistence/persistence.js";
import type { AgentEmitted } from "../../machines/contract/events.js";
import { MemoryCheckpointStore } from "../../machines/persistence/checkpoints/memory-store.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { runAgent } from "../../machines/runner.js";
import { restoreAgent } from "../../machines/persistence/persistence.js";
import { scriptedModel, type ScriptedResponse } from "../../testing/scripted-model.js";
import { defineTool } from "../../tools/tool.js";
import { callTurn, loopback, textTurn, type Loopback } from "../output/helpers.js";

const lookup = defineTool({
  name: "lookup",
  description: "Look a record up",
  parameters: z.object({ id: z.number() }),
  execute: ({ id }) => `record ${id}: ${"lorem ipsum dolor sit amet ".repeat(8)}`,
});

/** Each assistant tool call has all its results right after it, and every result has its call. */
function pairsIntact(messages: readonly Message[]): boolean {
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]!;
    if (m.role === "tool") {
      let j = i - 1;
      while (j >= 0 && messages[j]!.role === "tool") j--;
      const owner = messages[j];
      if (owner?.role !== "assistant" || !owner.toolCalls?.some((c) => c.id === m.toolCallId)) return false;
    }
    if (m.role === "assistant" && m.toolCalls) {
      const answered = new Set<string>();
      for (let j = i + 1; j < messages.length && messages[j]!.role === "tool"; j++) answered.add((messages[j] as { toolCallId: string }).toolCallId);
      if (!m.toolCalls.every((c) => answered.has(c.id))) return false;
    }
  }
  return true;
}

/** Conversations as a model builds them: system, the task, then turns (text, or calls with their results). */
const conversation = fc
  .array(
    fc.oneof(
      fc.string({ maxLength: 60 }).map((text) => [human(text)] as Message[]),
      fc.string({ maxLength: 60 }).map((text) => [ai(text)] as Message[]),
      fc.tuple(fc.integer({ min: 1, max: 3 }), fc.string({ maxLength: 80 }), fc.nat()).map(([calls, text, seed]) => {
        const ids = Array.from({ length: calls }, (_, k) => `c${seed}_${k}`);
        return [ai(null, ids.map((id) => ({ id, name: "lookup", arguments: `{"id":${seed}}` }))), ...ids.map((id) => toolMessage(id, text, { name: "lookup" }))];
      }),
    ),
    { maxLength: 25 },
  )
  .map((turns) => [system("You are terse."), human("The task"), ...turns.flat()]);

describe("trimming (pure)", () => {
  it("never separates a tool call from its results, never drops the system prompt or the task, keeps the tail", () => {
    fc.assert(
      fc.property(conversation, fc.integer({ min: 1, max: 600 }), fc.integer({ min: 0, max: 6 }), (messages, maxTokens, keepLast) => {
        const trimmed = trimMessages(messages, { maxTokens, keepLast }, 0);
        expect(trimmed[0]).toBe(messages[0]);
        expect(trimmed[1]).toBe(messages[1]);
        expect(pairsIntact(trimmed)).toBe(true);
        // What is kept is the head plus a suffix of the conversation: nothing reordered or invented.
        const rest = trimmed.slice(2);
        expect(messages.slice(messages.length - rest.length)).toEqual(rest);
        // The last keepLast messages always survive.
        const tail = messages.slice(Math.max(2, messages.length - keepLast));
        expect(trimmed.slice(trimmed.length - tail.length)).toEqual(tail);
        // It stops as soon as the prompt fits, or when nothing compactable is left.
        const span = compactableSpan(trimmed, keepLast);
        expect(promptTokens(trimmed, 0) <= maxTokens || span.end === span.start).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it("needs compaction only when over the limit with something to remove", () => {
    const messages = [system("s"), human("task"), ai(null, [{ id: "a", name: "lookup", arguments: "{}" }]), toolMessage("a", "x".repeat(400))];
    expect(needsCompaction(messages, { maxTokens: 10_000, keepLast: 0 }, 0)).toBe(false);
    expect(needsCompaction(messages, { maxTokens: 10, keepLast: 0 }, 0)).toBe(true);
    // keepLast 1 would keep the tool result, so its call stays too: nothing left to compact.
    expect(compactableSpan(messages, 1)).toEqual({ start: 2, end: 2 });
    expect(needsCompaction(messages, { maxTokens: 10, keepLast: 1 }, 0)).toBe(false);
  });
});

let open: Loopback | undefined;
afterEach(() => open?.server.close());

describe("Compacting in a run over HTTP", () => {
  it("trims before AgentLLM when the prompt would pass maxTokens, and reports context.compacted", async () => {
    const turns = [1, 2, 3, 4, 5].map((id) => callTurn([{ id: `call_${id}`, name: "lookup", arguments: { id } }]));
    open = await loopback([...turns, textTurn(["done"])]);
    const machine = createReactMachine({
      modelClient: open.client,
      tools: [lookup],
      config: { maxIterations: 10, context: { maxTokens: 350, strategy: "trim", keepLast: 2 } },
      configFile: false,
    });
    const events: AgentEmitted[] = [];
    const states: string[] = [];
    const output = await runAgent(machine, { messages: [human("Look up records 1 to 5.")] }, {
      onEvent: (e) => events.push(e),
      inspect: (e) => {
        if (e.type === "@xstate.snapshot" && e.actorRef.sessionId === e.rootId) states.push(JSON.stringify((e.snapshot as unknown as { value: unknown }).value));
      },
    });
    expect(output.status).toBe("succeeded");
    const compacted = events.filter((e): e is Extract<AgentEmitted, { type: "context.compacted" }> => e.type === "context.compacted");
    expect(compacted.length).toBeGreaterThan(0);
    for (const e of compacted) {
      expect(e.after.tokens).toBeLessThan(e.before.tokens);
      expect(e.after.messages).toBeLessThan(e.before.messages);
      expect(e.strategy).toBe("trim");
    }
    expect(states.some((s) => s.includes("Compacting"))).toBe(true);
    for (const body of open.bodies()) {
      const messages = body["messages"] as { role: string; content?: string; tool_calls?: { id: string }[]; tool_call_id?: string }[];
      expect(messages[0]!.role).toBe("system");
      expect(messages[1]).toMatchObject({ role: "user", content: "Look up records 1 to 5." });
      // Every tool result the server received has its call right before it.
      for (let i = 0; i < messages.length; i++) {
        if (messages[i]!.role !== "tool") continue;
        let j = i - 1;
        while (messages[j]!.role === "tool") j--;
        expect(messages[j]!.tool_calls?.some((c) => c.id === messages[i]!.tool_call_id)).toBe(true);
      }
    }
    const sizes = open.bodies().map((b) => (b["messages"] as unknown[]).length);
    expect(Math.max(...sizes)).toBeLessThan(2 + 5 * 2 + 1);
    // The output's history is the compacted one.
    expect(output.messages.length).toBeLessThan(1 + 5 * 2 + 1);
  });

  it("summarizes through the model: one message replaces the span, and its tokens count toward the usage", async () => {
    open = await loopback([
      callTurn([{ id: "call_1", name: "lookup", arguments: { id: 1 } }], { prompt: 100, completion: 10 }),
      callTurn([{ id: "call_2", name: "lookup", arguments: { id: 2 } }], { prompt: 100, completion: 10 }),
      textTurn(["Record 1 holds lorem ipsum."], { prompt: 300, completion: 7 }),
      textTurn(["Both records hold lorem ipsum."], { prompt: 100, completion: 10 }),
    ]);
    const machine = createReactMachine({
      modelClient: open.client,
      tools: [lookup],
      config: { maxIterations: 5, context: { maxTokens: 300, strategy: "summarize", keepLast: 2 } },
      configFile: false,
    });
    const events: AgentEmitted[] = [];
    const output = await runAgent(machine, { messages: [human("Compare records 1 and 2.")] }, { onEvent: (e) => events.push(e) });
    expect(output.status).toBe("succeeded");
    const bodies = open.bodies();
    expect(bodies).toHaveLength(4);
    // Request 3 is the summary: no tools, the span as a transcript.
    expect(bodies[2]!["tools"]).toBeUndefined();
    const summaryPrompt = bodies[2]!["messages"] as { role: string; content: string }[];
    expect(summaryPrompt[0]!.content).toMatch(/compress the middle of a conversation/);
    expect(summaryPrompt[1]!.content).toMatch(/called lookup\(\{"id":1\}\)/);
    // Request 4 goes on with the summary in place of the span, the task and the last call kept.
    const after = bodies[3]!["messages"] as { role: string; content?: string; tool_call_id?: string }[];
    expect(after[1]).toMatchObject({ role: "user", content: "Compare records 1 and 2." });
    expect(after[2]).toMatchObject({ role: "user", content: `${SUMMARY_PREFIX}Record 1 holds lorem ipsum.` });
    expect(after.filter((m) => m.role === "tool").map((m) => m.tool_call_id)).toEqual(["call_2"]);
    expect(output.usage).toEqual({ promptTokens: 600, completionTokens: 37, totalTokens: 637 });
    const compacted = events.find((e) => e.type === "context.compacted") as Extract<AgentEmitted, { type: "context.compacted" }>;
    expect(compacted.usage.totalTokens).toBe(307);
  });

  it("a failed summary ends the run as a model error, not a crash", async () => {
    open = await loopback([callTurn([{ id: "call_1", name: "lookup", arguments: { id: 1 } }])]);
    const machine = createReactMachine({
      modelClient: open.client,
      tools: [lookup],
      config: { context: { maxTokens: 50, strategy: "summarize", keepLast: 0 } },
      configFile: false,
    });
    const output = await runAgent(machine, { messages: [human("Look up 1.")] });
    expect(output.status).toBe("failed");
    expect(output.termination?.reason).toBe("modelError");
    expect(output.termination?.error?.message).toMatch(/no scripted turn #2/);
  });
});

describe("checkpoints of a long run stay bounded", () => {
  /** A store that keeps every save's size, besides the last record. */
  class MeasuringStore extends MemoryCheckpointStore {
    readonly saves: { rounds: number; messages: number; messagesBytes: number; historyBytes: number; totalBytes: number }[] = [];
    override save(runId: string, record: PersistedAgent): void {
      super.save(runId, record);
      const context = (record.snapshot as { context: { state: { messages: unknown[]; rounds: number }; loop: { history: unknown[] } } }).context;
      this.saves.push({
        rounds: context.state.rounds,
        messages: context.state.messages.length,
        messagesBytes: JSON.stringify(context.state.messages).length,
        historyBytes: JSON.stringify(context.loop.history).length,
        totalBytes: JSON.stringify(record).length,
      });
    }
  }

  it("over 500 rounds the saved history never grows past the context limit; only the call log grows", async () => {
    const rounds = 500;
    const script: ScriptedResponse[] = [
      ...Array.from({ length: rounds }, (_, i) => ({ toolCalls: [{ id: `call_${i}`, name: "lookup", arguments: { id: i } }] })),
      { content: "All records read." },
    ];
    const machine = createReactMachine({
      modelClient: scriptedModel(script),
      tools: [lookup],
      config: { maxIterations: rounds + 1, context: { maxTokens: 2_000, strategy: "trim", keepLast: 6 } },
      configFile: false,
    });
    const store = new MeasuringStore();
    const output = await runAgent(machine, { messages: [human("Read every record.")], runId: "long-run" }, { checkpoints: store });
    expect(output.status).toBe("succeeded");
    expect(output.rounds).toBe(rounds + 1);

    const at = (round: number) => store.saves.filter((s) => s.rounds === round).at(-1)!;
    const early = at(50);
    const late = at(rounds);
    const maxMessagesBytes = Math.max(...store.saves.map((s) => s.messagesBytes));
    // 2 000 tokens is at most ~8 000 bytes of text (4 bytes a token is generous for English), plus JSON framing.
    expect(maxMessagesBytes).toBeLessThan(16_000);
    expect(late.messages).toBeLessThanOrEqual(early.messages + 2);
    // Between round 50 and round 500 the checkpoint grew by the call log (budgets and rate limits read it), nothing else.
    const growth = late.totalBytes - late.historyBytes - (early.totalBytes - early.historyBytes);
    expect(Math.abs(growth)).toBeLessThan(2_000);

    // The last checkpoint still restores and holds the compacted history.
    const saved = store.load("long-run")!;
    const restored = restoreAgent(machine, saved);
    expect((restored as unknown as { context: { state: { messages: Message[] } } }).context.state.messages.length).toBe(output.messages.length);
  });
});
