import { describe, expect, it } from "vitest";
import { createActor } from "xstate";
import { z } from "zod";
import { human } from "../../actors/messages.js";
import type { AgentEmitted } from "../../machines/contract/events.js";
import { persistAgent, restoreAgent } from "../../machines/persistence/persistence.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { scriptedModel } from "../../testing/scripted-model.js";
import { defineTool } from "../../tools/tool.js";
import { awaitingApproval, done, waitFor } from "../persistence/helpers.js";
import { watchProcess } from "./process-watch.js";

/*
 * guard.approve / guard.reject / agent.cancel sent with fields of the wrong type: each is refused
 * with an event naming the field, the run keeps waiting, nothing throws, and the checkpoint taken
 * after them restores.
 */

const echo = defineTool({ name: "echo", description: "Say it back", parameters: z.object({ text: z.string() }), execute: ({ text }) => text });

const nullProto = (fields: Record<string, unknown>) => Object.assign(Object.create(null) as object, fields);
const cyclic = () => {
  const value: Record<string, unknown> = { text: "x" };
  value["self"] = value;
  return value;
};
const throwingGetter = () => ({
  get text(): never {
    throw new Error("getter");
  },
});

/** callIds of every wrong type. */
const badCallIds: [string, unknown][] = [
  ["a number", 42],
  ["NaN", Number.NaN],
  ["null", null],
  ["undefined", undefined],
  ["an array", ["call_1"]],
  ["an object", { id: "call_1" }],
  ["a null-prototype object", nullProto({ id: "call_1" })],
  ["a Symbol", Symbol("call_1")],
  ["a BigInt", 1n],
  ["a boolean", true],
  ["a function", () => "call_1"],
  ["an empty string", ""],
  ["a String object", new String("call_1")],
];

const badApproveArgs: [string, unknown][] = [
  ["a number", 17],
  ["null", null],
  ["an array", [1, 2]],
  ["a boolean", false],
  ["a Symbol", Symbol("args")],
  ["a BigInt inside", { text: 1n }],
  ["a cycle", cyclic()],
  ["a throwing getter", throwingGetter()],
  ["a Map", new Map([["text", "x"]])],
  ["a Date", new Date(0)],
];

const badReasons: [string, unknown][] = [
  ["a number", 5],
  ["null", null],
  ["an object", { why: "no" }],
  ["a null-prototype object", nullProto({ toString: "x" })],
  ["a Symbol", Symbol("why")],
  ["an array", ["no"]],
  ["a huge string", "x".repeat(20_000)],
];

async function parked() {
  const model = scriptedModel([{ toolCalls: [{ id: "call_1", name: "echo", arguments: { text: "hi" } }] }, { content: "done" }]);
  const machine = createReactMachine({ modelClient: model, tools: [echo], constraints: [() => ({ decision: "pending" })], configFile: false });
  const actor = createActor(machine, { input: { messages: [human("go")] } });
  const events: AgentEmitted[] = [];
  actor.on("*", (e) => events.push(e as AgentEmitted));
  actor.start();
  await waitFor(actor, awaitingApproval);
  return { machine, actor, events };
}

describe("malformed commands sent to a parked run", () => {
  const commands: [string, Record<string, unknown>, RegExp][] = [
    ...badCallIds.map(([label, callId]): [string, Record<string, unknown>, RegExp] => [`guard.approve with callId ${label}`, { type: "guard.approve", callId }, /guard\.approve: callId /]),
    ...badCallIds.map(([label, callId]): [string, Record<string, unknown>, RegExp] => [`guard.reject with callId ${label}`, { type: "guard.reject", callId }, /guard\.reject: callId /]),
    ...badApproveArgs.map(([label, args]): [string, Record<string, unknown>, RegExp] => [`guard.approve with args ${label}`, { type: "guard.approve", callId: "call_1", args }, /guard\.approve: (args |the event cannot be read)/]),
    ...badReasons.map(([label, reason]): [string, Record<string, unknown>, RegExp] => [`guard.reject with reason ${label}`, { type: "guard.reject", callId: "call_1", reason }, /guard\.reject: reason /]),
  ];

  it.each(commands)("%s: refused naming the field, the run keeps waiting, the checkpoint restores", async (_, command, message) => {
    const watch = watchProcess();
    const { machine, actor, events } = await parked();
    const before = JSON.stringify(actor.getPersistedSnapshot());
    expect(() => actor.send(command as never)).not.toThrow();
    expect(actor.getSnapshot().status).toBe("active");
    expect(awaitingApproval(actor.getSnapshot())).toBe(true);
    expect(JSON.stringify(actor.getPersistedSnapshot())).toBe(before);
    const refused = events.filter((e) => e.type === "guard.approval.refused");
    expect(refused).toHaveLength(1);
    expect(refused[0]).toMatchObject({ reason: expect.stringMatching(message) });
    expect(typeof (refused[0] as { callId: unknown }).callId).toBe("string");
    // The refusal itself is plain JSON (it goes into recordings and viewer pages).
    expect(() => JSON.stringify(refused[0])).not.toThrow();
    expect(() => restoreAgent(machine, JSON.stringify(persistAgent(actor)))).not.toThrow();

    actor.send({ type: "guard.approve", callId: "call_1" });
    const final = await waitFor(actor, done);
    expect(final.output).toMatchObject({ status: "succeeded", finalAnswer: "done" });
    await watch.stop();
    expect(watch.rejections).toEqual([]);
    expect(watch.consoleLines).toEqual([]);
  });

  it.each(badReasons)("agent.cancel with reason %s: refused with agent.command.refused, the run is not cancelled", async (_, reason) => {
    const { machine, actor, events } = await parked();
    expect(() => actor.send({ type: "agent.cancel", reason } as never)).not.toThrow();
    expect(actor.getSnapshot().status).toBe("active");
    expect(events.find((e) => e.type === "agent.command.refused")).toMatchObject({ command: "agent.cancel", reason: expect.stringMatching(/agent\.cancel: reason /) });
    expect(() => restoreAgent(machine, JSON.stringify(persistAgent(actor)))).not.toThrow();
    // A well-formed cancel still works.
    actor.send({ type: "agent.cancel", reason: "stop now" });
    const final = await waitFor(actor, done);
    expect(final.output?.termination).toMatchObject({ reason: "cancelled", detail: "stop now" });
  });

  it("well-formed decisions still apply: an edited approval as an object and as JSON text, a rejection with its reason", async () => {
    const { actor, events } = await parked();
    actor.send({ type: "guard.approve", callId: "call_1", args: { text: "edited" } });
    const final = await waitFor(actor, done);
    expect(final.output?.messages.find((m) => m.role === "tool")).toMatchObject({ content: "edited" });
    expect(events.some((e) => e.type === "guard.approval.refused")).toBe(false);

    const second = await parked();
    second.actor.send({ type: "guard.reject", callId: "call_1", reason: "not today" });
    const rejected = await waitFor(second.actor, done);
    expect(rejected.output?.messages.find((m) => m.role === "tool")).toMatchObject({ content: "Call rejected: not today" });
  });

  it("malformed commands outside AwaitingApproval (while the model answers) are refused the same way", async () => {
    const model = scriptedModel([{ content: "slow", delayMs: 30 }]);
    const machine = createReactMachine({ modelClient: model, tools: [echo], configFile: false });
    const actor = createActor(machine, { input: { messages: [human("go")] } });
    const events: AgentEmitted[] = [];
    actor.on("*", (e) => events.push(e as AgentEmitted));
    const calling = new Promise<void>((resolve) => actor.on("model.call.started", () => resolve()));
    actor.start();
    await calling;
    for (const [, callId] of badCallIds) actor.send({ type: "guard.approve", callId } as never);
    actor.send({ type: "agent.cancel", reason: Symbol("x") } as never);
    expect(events.filter((e) => e.type === "guard.approval.refused")).toHaveLength(badCallIds.length);
    expect(events.filter((e) => e.type === "agent.command.refused")).toHaveLength(1);
    const final = await waitFor(actor, done);
    expect(final.output).toMatchObject({ status: "succeeded", finalAnswer: "slow" });
  });
});

describe("forged internal events whose payloads could not be restored", () => {
  it("tools.ready with malformed tools, tools.failed with a non-JSON error, tool.progress with a bad call: ignored, the checkpoint restores", async () => {
    const model = scriptedModel([{ content: "slow", delayMs: 30 }]);
    const machine = createReactMachine({ modelClient: model, tools: [echo], configFile: false });
    const actor = createActor(machine, { input: { messages: [human("go")] } });
    actor.start();
    expect(actor.getSnapshot().value).toBe("Initialising");
    const forged: unknown[] = [
      { type: "tools.ready", tools: [{ name: 5 }] },
      { type: "tools.ready", tools: [{ name: "x", description: "d", inputSchema: { big: 1n }, parallelSafe: true, effectTags: [] }] },
      { type: "tools.ready", tools: [cyclic()] },
      { type: "tools.failed", error: { name: "E", message: "m", status: 10n } },
      { type: "tools.failed", error: { name: 7, message: "m" } },
      { type: "tools.failed", error: nullProto({ message: 5 }) },
    ];
    for (const event of forged) expect(() => actor.send(event as never)).not.toThrow();
    expect(actor.getSnapshot().value).toBe("Initialising");
    expect(() => restoreAgent(machine, JSON.stringify(persistAgent(actor)))).not.toThrow();
    await new Promise<void>((resolve) => actor.on("model.call.started", () => resolve()));
    actor.send({ type: "tool.progress", progress: [{ at: 1, event: { type: "tool.call.started", callId: 5, name: {}, arguments: "" } }, { at: "x", event: { type: "tool.call.started", callId: "a", name: "b", arguments: "" } }] } as never);
    expect(actor.getSnapshot().context.loop.history).toEqual([]);
    expect(() => restoreAgent(machine, JSON.stringify(persistAgent(actor)))).not.toThrow();
    const final = await waitFor(actor, done);
    expect(final.output).toMatchObject({ status: "succeeded", finalAnswer: "slow" });
  });
});
