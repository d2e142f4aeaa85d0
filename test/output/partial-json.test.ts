import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { human } from "../../actors/messages.js";
import { parsePartialJson } from "../../machines/chart/partial-json.js";
import { fragmentedCallTurn, loopback, type Loopback } from "./helpers.js";

describe("parsePartialJson", () => {
  it("reads what a streaming JSON text holds so far", () => {
    expect(parsePartialJson("")).toBeUndefined();
    expect(parsePartialJson("Thinking...")).toBeUndefined();
    expect(parsePartialJson("{")).toEqual({});
    expect(parsePartialJson('{"city":"Pa')).toEqual({ city: "Pa" });
    expect(parsePartialJson('{"city":"Paris","temp')).toEqual({ city: "Paris" });
    expect(parsePartialJson('{"city":"Paris","temperatureC":')).toEqual({ city: "Paris" });
    expect(parsePartialJson('{"a":[1,2,{"b":"x\\')).toEqual({ a: [1, 2, { b: "x" }] });
    expect(parsePartialJson('{"a":tr')).toEqual({});
    expect(parsePartialJson('```json\n{"a":1}')).toEqual({ a: 1 });
  });

  it("every prefix of a JSON text reads as something the whole value extends", () => {
    const isPrefixOf = (part: unknown, whole: unknown): boolean => {
      if (typeof part === "string" && typeof whole === "string") return whole.startsWith(part);
      if (Array.isArray(part) && Array.isArray(whole)) return part.length <= whole.length && part.every((p, i) => isPrefixOf(p, whole[i]));
      if (part && whole && typeof part === "object" && typeof whole === "object" && !Array.isArray(part) && !Array.isArray(whole)) {
        return Object.entries(part).every(([k, v]) => k in whole && isPrefixOf(v, (whole as Record<string, unknown>)[k]));
      }
      if (typeof part === "number" && typeof whole === "number") return String(whole).startsWith(String(part)) || part === whole;
      return part === whole;
    };
    fc.assert(
      fc.property(fc.dictionary(fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 3 })), fc.nat(), (value, cut) => {
        const text = JSON.stringify(value);
        const prefix = text.slice(0, cut % (text.length + 1));
        const partial = parsePartialJson(prefix);
        if (partial !== undefined) expect(isPrefixOf(partial, JSON.parse(text))).toBe(true);
        expect(parsePartialJson(text)).toEqual(JSON.parse(text));
      }),
      { numRuns: 500 },
    );
  });
});

let open: Loopback | undefined;
afterEach(() => open?.server.close());

describe("onToolArguments over HTTP", () => {
  it("reports a streamed call's arguments so far after each fragment", async () => {
    open = await loopback([fragmentedCallTurn("call_1", "final_result", ['{"ci', 'ty":"Li', 'ma"}'])]);
    const seen: string[] = [];
    const turn = await open.client.complete({ messages: [human("?")], tools: [] }, { onToolArguments: (call) => seen.push(`${call.index}:${call.name}:${call.arguments}`) });
    expect(seen).toEqual(['0:final_result:{"ci', '0:final_result:{"city":"Li', '0:final_result:{"city":"Lima"}']);
    expect(turn.toolCalls[0]!.arguments).toBe('{"city":"Lima"}');
  });
});
