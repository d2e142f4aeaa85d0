import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ChunkSchema, CompletionSchema, parseChunk, parseCompletion } from "../../actors/openai/openai-wire-schemas.js";

/*
 * `parseChunk`/`parseCompletion` hand the usual response on without running zod. That shortcut must
 * never accept what the schema rejects, nor read differently: for any value, the outcome and the
 * data are the schema's own.
 */

/** Mostly a value of the right type, now and then one of the wrong type (mostly right, so whole responses often pass). */
const mostly = <T>(right: fc.Arbitrary<T>, wrong: fc.Arbitrary<unknown>) => fc.oneof({ weight: 20, arbitrary: right }, { weight: 1, arbitrary: wrong });
const absent = fc.constantFrom(undefined, null);
const junk = fc.constantFrom<unknown>(0.5, 7, -1, Number.MAX_SAFE_INTEGER + 2, Number.NaN, Number.POSITIVE_INFINITY, true, "1", [], {}, [1]);
const text = mostly(fc.oneof(absent, fc.string({ maxLength: 3 })), junk);
const index = mostly(fc.oneof(absent, fc.integer({ min: -1, max: 3 })), junk);
const count = mostly(fc.oneof(absent, fc.integer({ min: 0, max: 99 }), fc.constant(0.5)), junk);
// Arguments as an object are valid too, but only the schema takes them.
const args = mostly(fc.oneof(absent, fc.string({ maxLength: 3 }), fc.dictionary(fc.string({ maxLength: 2 }), fc.integer())), junk);
/** An object with some of `shape`'s keys, plus keys we never read; now and then not an object at all. */
const object = <T extends Record<string, fc.Arbitrary<unknown>>>(shape: T, nullable = true) =>
  mostly(
    fc
      .record(shape, { requiredKeys: [] })
      .chain((known) => fc.dictionary(fc.constantFrom("id", "object", "x_extra"), fc.string({ maxLength: 2 })).map((extra) => ({ ...extra, ...known }))),
    nullable ? fc.oneof(absent, junk) : junk,
  );
const list = <T>(item: fc.Arbitrary<T>) => mostly(fc.oneof(absent, fc.array(item, { maxLength: 3 })), junk);

const toolCall = object({ index, id: text, type: text, function: object({ name: text, arguments: args }) }, false);
const message = { content: text, refusal: text, reasoning_content: text, reasoning: text, tool_calls: list(toolCall) };
const usage = object({ prompt_tokens: count, completion_tokens: count, total_tokens: count });
const chunk = object({ model: text, usage, choices: list(object({ index, finish_reason: text, delta: object(message) }, false)) }, false);
const completion = object({ model: text, usage, choices: list(object({ index, finish_reason: text, message: object(message, false) }, false)) }, false);

/** How often the shortcut was taken: the properties mean something only if it often was. */
const shortcuts = { chunk: 0, completion: 0 };

describe("wire fast path", () => {
  const agrees = <T>(kind: keyof typeof shortcuts, values: fc.Arbitrary<unknown>, fast: (raw: unknown) => { success: boolean; data?: T }, schema: { safeParse(raw: unknown): { success: boolean; data?: unknown } }) => {
    fc.assert(
      fc.property(values, (raw) => {
        const quick = fast(raw);
        if (quick.data === raw) shortcuts[kind] += 1;
        const reference = schema.safeParse(raw);
        expect(quick.success).toBe(reference.success);
        if (quick.success) expect(quick.data).toEqual(reference.data);
      }),
      { numRuns: 2000 },
    );
    expect(shortcuts[kind]).toBeGreaterThan(200);
  };

  it("agrees with ChunkSchema on every chunk", () => agrees("chunk", chunk, parseChunk, ChunkSchema));

  it("agrees with CompletionSchema on every completion", () => agrees("completion", completion, parseCompletion, CompletionSchema));

  it("takes the shortcut for what servers usually send, and words a bad field as the schema does", () => {
    const usual = { id: "c", object: "chat.completion.chunk", model: "m", choices: [{ index: 0, delta: { content: "hi" }, finish_reason: null }] };
    // The very object comes back: no zod copy was made.
    expect(parseChunk(usual).data).toBe(usual);
    const bad = { choices: [{ index: 0, delta: { content: 42 } }] };
    expect(parseChunk(bad).error?.issues).toEqual(ChunkSchema.safeParse(bad).error?.issues);
  });
});
