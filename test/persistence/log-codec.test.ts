import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { encodeValue, MIN_STREAM_CHARS, type Encoded, type KnownStream } from "../../machines/persistence/log/codec.js";
import { contextAfter, decodeSkeleton, emptyContext, withStoredIds, type RunContext } from "../../machines/persistence/log/streams.js";

/** A writer in memory: gives planned streams ids, keeps what the next save needs. */
function writer(runId = "r") {
  let next = 1;
  let context: RunContext = emptyContext(runId);
  const all = new Map<number, KnownStream>();
  const save = (value: unknown): Encoded => {
    const encoded = encodeValue(value, context);
    const ids = new Map(encoded.streams.map((s) => [s.id, next++]));
    const stored = withStoredIds(encoded, ids);
    for (const stream of stored.known.values()) all.set(stream.id, stream);
    context = contextAfter(context, stored, next++, undefined);
    return stored;
  };
  const load = (stored: Encoded) => decodeSkeleton(stored.skeleton, stored.refs, all).value;
  return { save, load, get context() {
    return context;
  } };
}

const message = (i: number) => ({ role: i % 2 ? "tool" : "assistant", content: `message ${i}: ${"lorem ipsum ".repeat(8)}`, ...(i % 2 ? { toolCallId: `call_${i}` } : {}) });
const snapshotAt = (n: number) => {
  const messages = Array.from({ length: n }, (_, i) => message(i));
  return { runId: "r", snapshot: { context: { state: { messages, rounds: n }, loop: { history: messages.map((_, i) => ({ callId: `call_${i}`, name: "lookup", at: 1_700_000_000_000 + i })) } }, children: { llm: { input: { messages, state: { messages } } } } } };
};

describe("the run log's codec", () => {
  it("decodes to the exact JSON text it encoded, whatever the value (property)", () => {
    fc.assert(
      fc.property(fc.array(fc.jsonValue({ maxDepth: 4 }), { minLength: 1, maxLength: 6 }), (values) => {
        const w = writer();
        for (const value of values) {
          const stored = w.save(value);
          expect(JSON.stringify(w.load(stored))).toBe(JSON.stringify(value));
        }
      }),
      { numRuns: 300 },
    );
  });

  it("keeps objects that carry its own marker key, and __proto__ keys, as they were", () => {
    const w = writer();
    const tricky = JSON.parse('{"$stream":3,"__proto__":{"x":1},"a":[{"$stream":"escaped","object":{}}],"big":' + JSON.stringify(Array.from({ length: 40 }, (_, i) => ({ $stream: i }))) + "}");
    const stored = w.save(tricky);
    const loaded = w.load(stored) as Record<string, unknown>;
    expect(JSON.stringify(loaded)).toBe(JSON.stringify(tricky));
    expect(Object.getPrototypeOf(loaded)).toBe(Object.prototype);
    expect(Object.hasOwn(loaded, "__proto__")).toBe(true);
  });

  it("stores each element of a growing conversation once, wherever copies of it sit", () => {
    const w = writer();
    let appended = 0;
    for (const n of [4, 5, 6, 9]) {
      const stored = w.save(snapshotAt(n));
      expect(JSON.stringify(w.load(stored))).toBe(JSON.stringify(snapshotAt(n)));
      appended += stored.items.length;
    }
    // The conversation (9 messages) and the call log (9 entries) once each, though the snapshot holds the conversation three times.
    expect(appended).toBe(18);
  });

  it("a diverging array (compaction, a replaced message) starts a stream on the shared prefix, not a copy", () => {
    const w = writer();
    w.save(snapshotAt(8));
    const replaced = snapshotAt(8);
    const edited = { ...message(7), content: "another answer" };
    replaced.snapshot.context.state.messages = [...replaced.snapshot.context.state.messages.slice(0, 7), edited];
    replaced.snapshot.children.llm.input = { messages: replaced.snapshot.context.state.messages, state: { messages: replaced.snapshot.context.state.messages } };
    const stored = w.save(replaced);
    expect(stored.streams).toEqual([{ id: expect.any(Number), base: [expect.any(Number), 7] }]);
    expect(stored.items.map((i) => i.text)).toEqual([JSON.stringify(edited)]);
    expect(JSON.stringify(w.load(stored))).toBe(JSON.stringify(replaced));
  });

  it("leaves small arrays inline and writes nothing again when nothing changed", () => {
    const w = writer();
    const small = { tags: ["a", "b"], list: Array.from({ length: 3 }, (_, i) => i) };
    expect(JSON.stringify(small.tags).length).toBeLessThan(MIN_STREAM_CHARS);
    expect(w.save(small).refs).toEqual([]);
    w.save(snapshotAt(6));
    const again = w.save(snapshotAt(6));
    expect(again.items).toEqual([]);
    expect(again.streams).toEqual([]);
  });
});
