import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { z } from "zod";
import {
  FunctionCallItemSchema,
  MessageItemSchema,
  parseOutputItem,
  parseResponseObject,
  ReasoningOutputItemSchema,
  ResponseObjectSchema,
} from "../../actors/openai/responses-wire-schemas.js";

/*
 * `parseResponseObject`/`parseOutputItem` hand the usual Responses reply on without running zod.
 * As on the Chat Completions side (wire-fast-path.test.ts), the shortcut must never accept what the
 * schemas reject, nor read differently: for any value, the outcome and the data are the schemas'.
 */

const mostly = <T>(right: fc.Arbitrary<T>, wrong: fc.Arbitrary<unknown>) => fc.oneof({ weight: 20, arbitrary: right }, { weight: 1, arbitrary: wrong });
const absent = fc.constantFrom(undefined, null);
const junk = fc.constantFrom<unknown>(0.5, 7, -1, Number.NaN, Number.POSITIVE_INFINITY, true, "1", [], {}, [1]);
const text = mostly(fc.oneof(absent, fc.string({ maxLength: 3 })), junk);
const count = mostly(fc.oneof(absent, fc.integer({ min: 0, max: 99 }), fc.constant(0.5)), junk);
const args = mostly(fc.oneof(absent, fc.string({ maxLength: 3 }), fc.dictionary(fc.string({ maxLength: 2 }), fc.integer())), junk);
const object = <T extends Record<string, fc.Arbitrary<unknown>>>(shape: T, nullable = true) =>
  mostly(
    fc.record(shape, { requiredKeys: [] }).chain((known) => fc.dictionary(fc.constantFrom("status", "x_extra", "annotations"), fc.string({ maxLength: 2 })).map((extra) => ({ ...extra, ...known }))),
    nullable ? fc.oneof(absent, junk) : junk,
  );
const list = <T>(item: fc.Arbitrary<T>) => mostly(fc.oneof(absent, fc.array(item, { maxLength: 3 })), junk);
const typed = (type: string, shape: Record<string, fc.Arbitrary<unknown>>) => object({ type: mostly(fc.constant(type), junk), ...shape }, false);

const message = typed("message", { content: list(object({ type: text, text, refusal: text }, false)) });
const call = typed("function_call", { id: text, call_id: text, name: text, arguments: args });
const reasoning = typed("reasoning", { id: text, encrypted_content: text, summary: list(object({ text }, false)), content: list(object({ text }, false)) });
const other = typed("web_search_call", { action: text });
const item = fc.oneof(message, call, reasoning, other);
const response = object(
  {
    model: text,
    status: text,
    output: list(item),
    usage: object({ input_tokens: count, output_tokens: count, total_tokens: count }),
    error: object({ code: text, message: text }),
    incomplete_details: object({ reason: text }),
  },
  false,
);

const ITEMS: Record<string, z.ZodType> = { message: MessageItemSchema, function_call: FunctionCallItemSchema, reasoning: ReasoningOutputItemSchema };

/** The schemas alone: the envelope, then each item of a type we read. */
function reference(raw: unknown): { success: boolean; data?: unknown } {
  const envelope = ResponseObjectSchema.safeParse(raw);
  if (!envelope.success) return envelope;
  const output = [...(envelope.data.output ?? [])];
  for (const [i, entry] of output.entries()) {
    const schema = ITEMS[entry.type];
    if (!schema) continue;
    const checked = schema.safeParse(entry);
    if (!checked.success) return checked;
    output[i] = checked.data as typeof entry;
  }
  return { success: true, data: envelope.data.output === undefined || envelope.data.output === null ? envelope.data : { ...envelope.data, output } };
}

describe("Responses wire fast path", () => {
  it("agrees with the schemas on every response object, and takes the shortcut often", () => {
    let shortcuts = 0;
    fc.assert(
      fc.property(response, (raw) => {
        const quick = parseResponseObject(raw);
        if (quick.data === raw) shortcuts += 1;
        const expected = reference(raw);
        expect(quick.success).toBe(expected.success);
        if (quick.success) expect(quick.data).toEqual(expected.data);
      }),
      { numRuns: 2000 },
    );
    expect(shortcuts).toBeGreaterThan(200);
  });

  it("agrees with each item's schema on a stream's finished items (other types are passed over, a non-object refused)", () => {
    fc.assert(
      fc.property(item, (raw) => {
        const quick = parseOutputItem(raw);
        if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
          // Not an item at all: malformed, whatever it says.
          expect(quick?.success).toBe(false);
          return;
        }
        const type = (raw as { type?: unknown }).type;
        const schema = typeof type === "string" ? ITEMS[type] : undefined;
        if (!schema) {
          expect(quick).toBeUndefined();
          return;
        }
        const expected = schema.safeParse(raw);
        expect(quick?.success).toBe(expected.success);
        if (quick?.success) expect(quick.data).toEqual(expected.data);
      }),
      { numRuns: 2000 },
    );
  });

  it("takes the shortcut for what OpenAI sends, and names a bad field by its path", () => {
    const usual = {
      id: "resp_1",
      object: "response",
      status: "completed",
      model: "gpt-5",
      output: [
        { id: "rs_1", type: "reasoning", summary: [{ type: "summary_text", text: "hm" }], encrypted_content: "gAAA" },
        { id: "fc_1", type: "function_call", call_id: "call_1", name: "f", arguments: "{}", status: "completed" },
        { id: "ws_1", type: "web_search_call", status: "completed", action: { type: "search", query: "q" } },
      ],
      usage: { input_tokens: 1, output_tokens: 2, total_tokens: 3, output_tokens_details: { reasoning_tokens: 1 } },
    };
    expect(parseResponseObject(usual).data).toBe(usual);
    const bad = parseResponseObject({ ...usual, output: [usual.output[0], { type: "function_call", call_id: 7 }] });
    expect(bad.success).toBe(false);
    expect(bad.error?.issues[0]?.path).toEqual(["output", 1, "call_id"]);
  });
});
