import { describe, expect, it } from "vitest";
import { z } from "zod";
import { planCall, type CallFacts, type PlannedTool } from "../../actors/call-plan.js";
import type { CallDecision, Guard } from "../../actors/guard.js";
import { human, type ToolCall, type ToolMessage } from "../../actors/messages.js";
import type { AgentEmitted } from "../../machines/contract/events.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { runAgent } from "../../machines/runner.js";
import { predictOutcomes } from "../../testing/model-based-inputs.js";
import { scriptedModel } from "../../testing/scripted-model.js";
import { defineTool, toolInfo } from "../../tools/tool.js";

/**
 * planCall decides what becomes of a call, once, for the executor and for the model-based
 * predictions. The pure cases first; then the real executor and the prediction are held to the
 * same outcome for the same calls, so the two cannot drift apart.
 */

const add = defineTool({ name: "add", description: "Add", parameters: z.object({ a: z.number(), b: z.number() }), execute: ({ a, b }) => a + b });
const pay = defineTool({ name: "pay", description: "Pay", parameters: z.object({ amount: z.number() }), effectTags: ["payment"], execute: () => "paid" });
const again = defineTool({ name: "again", description: "Safe to repeat", parameters: z.object({}), idempotent: true, execute: () => "done" });
const tools = new Map<string, PlannedTool>([add, pay, again].map((tool) => [tool.name, tool]));

const call = (name: string, args: Record<string, unknown> | string = {}): ToolCall => ({ id: "c1", name, arguments: typeof args === "string" ? args : JSON.stringify(args) });
const allowed = (c: ToolCall, extra: Partial<CallDecision> = {}): CallDecision => ({ callId: c.id, name: c.name, status: "allowed", ...extra });
const facts = (c: ToolCall, decision: CallDecision | undefined, more: Partial<CallFacts<PlannedTool>> = {}): CallFacts<PlannedTool> => ({
  call: c,
  decision,
  lookup: (name) => tools.get(name),
  toolNames: () => [...tools.keys()],
  ...more,
});

describe("planCall: what becomes of one call", () => {
  it("answers a call without a decision, a denied, a pending and a rejected one, and never starts them", () => {
    const c = call("pay", { amount: 1 });
    expect(planCall(facts(c, undefined))).toEqual({
      kind: "answer",
      outcome: { callId: "c1", name: "pay", status: "denied", content: "Call denied: no guard decision was recorded for this call", effectTags: [] },
    });
    expect(planCall(facts(c, { ...allowed(c), status: "denied", reason: "not today" }))).toMatchObject({ kind: "answer", outcome: { status: "denied", content: "Call denied: not today" } });
    expect(planCall(facts(c, { ...allowed(c), status: "pending", reason: "ask" }))).toMatchObject({ kind: "answer", outcome: { status: "denied", content: "Call denied: ask" } });
    expect(planCall(facts(c, { ...allowed(c), status: "rejected" }))).toMatchObject({ kind: "answer", outcome: { status: "rejected", content: "Call rejected: the approver rejected it" } });
    // An answered call never asks the journal.
    expect(planCall(facts(c, { ...allowed(c), status: "rejected" }, { journal: "unread" })).kind).toBe("answer");
  });

  it("runs an allowed call with its validated arguments, an approved one with the approver's edit", () => {
    const c = call("add", { a: 1, b: 2 });
    expect(planCall(facts(c, allowed(c)))).toEqual({ kind: "run", arguments: '{"a":1,"b":2}', tool: add, args: { a: 1, b: 2 }, claim: false });
    const edited = planCall(facts(c, allowed(c, { status: "approved", editedArguments: '{"a":5,"b":5}' })));
    expect(edited).toMatchObject({ kind: "run", arguments: '{"a":5,"b":5}', args: { a: 5, b: 5 } });
  });

  it("refuses an unknown tool, a tool not offered this round, arguments that are no object and arguments that do not fit", () => {
    const unknown = call("nope");
    expect(planCall(facts(unknown, allowed(unknown)))).toEqual({
      kind: "refuse",
      arguments: "{}",
      errorKind: "unknown_tool",
      message: 'there is no tool named "nope". Available tools: add, pay, again.',
    });
    const hidden = call("pay", { amount: 1 });
    expect(planCall(facts(hidden, allowed(hidden), { offered: ["add"] }))).toMatchObject({
      kind: "refuse",
      errorKind: "unknown_tool",
      message: 'there is no tool named "pay". Available tools: add.',
    });
    expect(planCall({ ...facts(unknown, allowed(unknown)), lookup: () => undefined, toolNames: () => [] })).toMatchObject({ message: expect.stringContaining("Available tools: none.") });
    const broken = call("add", "{not json");
    expect(planCall(facts(broken, allowed(broken)))).toMatchObject({ kind: "refuse", errorKind: "invalid_json", message: "the arguments for add are not a JSON object: {not json" });
    const wrong = call("add", { a: "one" });
    expect(planCall(facts(wrong, allowed(wrong)))).toMatchObject({ kind: "refuse", errorKind: "invalid_arguments", message: expect.stringMatching(/^invalid arguments for add: /) });
    // The approver's edit is what gets checked.
    const good = call("add", { a: 1, b: 2 });
    expect(planCall(facts(good, allowed(good, { status: "approved", editedArguments: "[]" })))).toMatchObject({ kind: "refuse", errorKind: "invalid_json", arguments: "[]" });
  });

  it("with a journal: reads it first, replays a recorded outcome, refuses to repeat an interrupted call, claims a fresh one", () => {
    const c = call("pay", { amount: 1 });
    const decision = allowed(c);
    expect(planCall(facts(c, decision, { journal: "unread" }))).toEqual({ kind: "readJournal", arguments: '{"amount":1}' });
    const recorded = { callId: "c1", name: "pay", status: "ok" as const, content: "paid", effectTags: ["payment"] };
    // A recorded outcome stands even when the tool has gone since.
    expect(planCall(facts(c, decision, { journal: { state: "completed", outcome: recorded }, lookup: () => undefined }))).toEqual({
      kind: "replay",
      arguments: '{"amount":1}',
      outcome: recorded,
    });
    expect(planCall(facts(c, decision, { journal: "empty" }))).toMatchObject({ kind: "run", tool: pay, claim: true });
    expect(planCall(facts(c, decision, { journal: { state: "started", name: "pay" } }))).toMatchObject({
      kind: "interrupted",
      errorKind: "outcome_unknown",
      message: expect.stringContaining("pay was interrupted"),
    });
    const repeatable = call("again");
    expect(planCall(facts(repeatable, allowed(repeatable), { journal: { state: "started", name: "again" } }))).toMatchObject({ kind: "run", tool: again, claim: false });
    // A bad call is refused before the journal's "started" matters.
    const unknown = call("nope");
    expect(planCall(facts(unknown, allowed(unknown), { journal: { state: "started", name: "nope" } }))).toMatchObject({ kind: "refuse", errorKind: "unknown_tool" });
  });
});

describe("the executor and the model-based prediction give the same outcome", () => {
  it("for denied, unknown, not offered, malformed and runnable calls of one batch", async () => {
    const lookup = defineTool({ name: "lookup", description: "Look up", parameters: z.object({ key: z.string() }), execute: ({ key }) => `value of ${key}` });
    const deny: Guard = (c) => (c.name === "pay" ? { decision: "deny", reason: "no payments in tests" } : { decision: "allow" });
    const calls: ToolCall[] = [
      { id: "c1", name: "nope", arguments: "{}" },
      { id: "c2", name: "add", arguments: "{oops" },
      { id: "c3", name: "pay", arguments: '{"amount":3}' },
      { id: "c4", name: "lookup", arguments: '{"key":"x"}' },
      { id: "c5", name: "add", arguments: '{"a":1,"b":2}' },
    ];
    const model = scriptedModel([{ toolCalls: calls.map((c) => ({ id: c.id, name: c.name, arguments: c.arguments })) }, { content: "done" }]);
    const machine = createReactMachine({ modelClient: model, tools: [add, pay, lookup], constraints: [deny], prepareRound: () => ({ tools: ["add", "pay"] }) });
    const events: AgentEmitted[] = [];
    const output = await runAgent(machine, { messages: [human("go")] }, { onEvent: (e) => events.push(e) });
    const observed = output.messages.filter((m): m is ToolMessage => m.role === "tool");

    const decisions: CallDecision[] = calls.map((c) => (c.name === "pay" ? { callId: c.id, name: c.name, status: "denied", reason: "no payments in tests" } : allowed(c)));
    const predicted = predictOutcomes(
      { runId: "r", calls, decisions, mode: "auto", state: {}, maxOutputChars: 10_000, offered: ["add", "pay"] },
      [add, pay, lookup].map(toolInfo),
    ).outcomes;

    expect(predicted.map((o) => o.status)).toEqual(["error", "error", "denied", "error", "ok"]);
    for (const [index, outcome] of predicted.entries()) {
      const message = observed.find((m) => m.toolCallId === outcome.callId)!;
      expect(message.isError ?? false).toBe(outcome.status !== "ok");
      // A runnable call's output is the tool's own; the prediction only says that it ran.
      if (outcome.status !== "ok") expect(message.content, `call ${index + 1}`).toBe(outcome.content);
    }
    // The failures the executor reported carry the prediction's kind and message.
    const failed = events.filter((e): e is Extract<AgentEmitted, { type: "tool.call.failed" }> => e.type === "tool.call.failed");
    expect(failed.map((e) => [e.callId, e.errorKind, e.error])).toEqual(predicted.filter((o) => o.status === "error").map((o) => [o.callId, o.errorKind, o.error]));
  });
});
