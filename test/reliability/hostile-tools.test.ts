import { describe, expect, it } from "vitest";
import { z } from "zod";
import { human, type ToolMessage } from "../../actors/messages.js";
import { MemoryCheckpointStore } from "../../machines/persistence/checkpoints/memory-store.js";
import type { AgentEmitted } from "../../machines/contract/events.js";
import { restoreAgent } from "../../machines/persistence/persistence.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { runAgent } from "../../machines/runner.js";
import { scriptedModel } from "../../testing/scripted-model.js";
import { defineTool } from "../../tools/tool.js";
import { watchProcess } from "./process-watch.js";

/*
 * Tools are user code: what they return and what they throw is whatever it is. Every such value
 * becomes an observation the model can use, the run goes on, and its checkpoint restores.
 */

/** Runs one call of a tool returning (or throwing) what `produce` makes; returns the observation and the run. */
async function observe(produce: () => unknown) {
  const tool = defineTool({ name: "probe", description: "returns something hostile", parameters: z.object({}), execute: () => produce() });
  const model = scriptedModel([{ toolCalls: [{ id: "c1", name: "probe", arguments: {} }] }, { content: "went on" }]);
  const store = new MemoryCheckpointStore();
  const machine = createReactMachine({ modelClient: model, tools: [tool], configFile: false, journal: store });
  const events: AgentEmitted[] = [];
  const output = await runAgent(machine, { messages: [human("go")], runId: "run-probe" }, { checkpoints: store, onEvent: (e) => events.push(e) });
  const observation = output.messages.find((m): m is ToolMessage => m.role === "tool")!;
  expect(output.status).toBe("succeeded");
  expect(output.finalAnswer).toBe("went on");
  expect(() => restoreAgent(machine, store.load("run-probe"))).not.toThrow();
  // The model read the same observation the run kept.
  expect(model.requests[1]!.messages.some((m) => m.role === "tool" && m.content === observation.content)).toBe(true);
  return { observation, events };
}

class Money {
  constructor(readonly cents: bigint) {}
}
class Exploding {
  toJSON(): never {
    throw new Error("toJSON exploded");
  }
}

describe("results JSON cannot encode", () => {
  const circular = () => {
    const node: Record<string, unknown> = { name: "loop" };
    node["self"] = node;
    return node;
  };
  const cases: [string, () => unknown, RegExp][] = [
    ["a circular object", circular, /"name":"loop".*circular reference/],
    ["a circular list", () => { const list: unknown[] = [1]; list.push(list); return list; }, /^\[1,"\[circular reference\]"\]$/],
    ["a BigInt", () => 12345678901234567890n, /^"12345678901234567890"$/],
    ["a BigInt inside an object", () => ({ total: 10n ** 20n }), /"total":"100000000000000000000"/],
    ["a class instance holding a BigInt", () => new Money(250n), /"cents":"250"/],
    ["a getter that throws", () => ({ ok: 1, get broken(): never { throw new Error("getter says no"); } }), /"ok":1.*getter says no/],
    ["a Map", () => new Map([["a", 1], ["b", 2]]), /^\{"a":1,"b":2\}$/],
    ["a Map with object keys", () => new Map([[{ k: 1 }, "v"]]), /\[\[\{"k":1\},"v"\]\]/],
    ["a Set", () => new Set([1, "two", 3]), /^\[1,"two",3\]$/],
    ["a Map nested in an object", () => ({ index: new Map([["x", new Set([1])]]) }), /"index":\{"x":\[1\]\}/],
    ["a nested instance whose toJSON throws", () => ({ good: true, bad: new Exploding() }), /"good":true.*toJSON threw: toJSON exploded/],
    ["a Symbol", () => Symbol("tag"), /Symbol\(tag\)/],
    ["a function", () => function helper() {}, /function helper/],
    ["NaN and Infinity (as JSON has them)", () => ({ a: Number.NaN, b: Infinity }), /^\{"a":null,"b":null\}$/],
    ["a null-prototype object", () => Object.assign(Object.create(null) as object, { plain: "yes" }), /"plain":"yes"/],
  ];

  it.each(cases)("%s: an ok observation with the data, never [object Object]", async (_, produce, expected) => {
    const { observation, events } = await observe(produce);
    expect(observation.content).not.toMatch(/\[object Object\]/);
    expect(observation.content).toMatch(expected);
    expect(observation.isError ?? false).toBe(false);
    expect(events.some((e) => e.type === "tool.call.completed")).toBe(true);
  });

  it("an instance whose own toJSON throws: an error observation saying the result could not be encoded", async () => {
    const { observation, events } = await observe(() => new Exploding());
    expect(observation.isError).toBe(true);
    expect(observation.content).toMatch(/probe ran, but the result could not be turned into text \(toJSON exploded\)/);
    expect(events.find((e) => e.type === "tool.call.failed")).toMatchObject({ errorKind: "invalid_output" });
  });

  it("a Proxy whose every trap throws: an error observation, not a crash", async () => {
    const trap = () => {
      throw new Error("trap");
    };
    const hostile = new Proxy({}, { get: trap, ownKeys: trap, getPrototypeOf: trap, has: trap, getOwnPropertyDescriptor: trap });
    const { observation } = await observe(() => hostile);
    expect(observation.isError).toBe(true);
    // Awaiting the result already reads its `then`: the trap's error is what the tool produced.
    expect(observation.content).toBe("Error: probe failed: trap");
  });
});

describe("throws that are not Errors", () => {
  const cases: [string, () => unknown, RegExp][] = [
    ["a plain object with a message", () => ({ message: "quota exceeded", code: 7 }), /probe failed: quota exceeded$/],
    ["an object without a prototype", () => Object.assign(Object.create(null) as object, { message: "no prototype here" }), /probe failed: no prototype here$/],
    ["a null-prototype object without a message", () => Object.assign(Object.create(null) as object, { code: 42 }), /probe failed: it threw \{"code":42\}/],
    ["an object whose toString throws", () => ({ toString() { throw new Error("toString broke"); }, detail: "x" }), /probe failed: it threw \{"detail":"x"\}/],
    ["an object whose message getter throws", () => ({ get message(): never { throw new Error("nope"); } }), /probe failed: /],
    ["a Symbol", () => Symbol("boom"), /probe failed: it threw Symbol\(boom\)/],
    ["undefined", () => undefined, /probe failed: it threw undefined/],
    ["null", () => null, /probe failed: it threw null/],
    ["a string", () => "plain text failure", /probe failed: plain text failure$/],
    ["a number", () => 404, /probe failed: 404$/],
    ["a BigInt", () => 9n, /probe failed: 9$/],
    ["an empty object", () => ({}), /probe failed: it threw an object without a message/],
    ["an Error with an empty message", () => new RangeError(""), /probe failed: RangeError without a message/],
    ["a Proxy that throws on every read", () => new Proxy({}, { get: () => { throw new Error("t"); }, getPrototypeOf: () => { throw new Error("t"); }, ownKeys: () => { throw new Error("t"); } }), /probe failed: /],
  ];

  it.each(cases)("%s: an error observation carrying it, and the run goes on (never internalError)", async (_, make, expected) => {
    const watch = watchProcess();
    const { observation, events } = await observe(() => {
      throw make();
    });
    expect(observation.isError).toBe(true);
    expect(observation.content).toMatch(expected);
    expect(events.find((e) => e.type === "tool.call.failed")).toMatchObject({ errorKind: "threw" });
    expect(events.find((e) => e.type === "loop.terminated")).toMatchObject({ status: "succeeded" });
    await watch.stop();
    expect(watch.rejections).toEqual([]);
  });

  it("an async tool rejecting with such values behaves the same", async () => {
    const { observation } = await observe(() => Promise.reject(Object.assign(Object.create(null) as object, { message: "async and prototype-less" })));
    expect(observation.content).toBe("Error: probe failed: async and prototype-less");
  });
});
