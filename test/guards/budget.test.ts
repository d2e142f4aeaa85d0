import { describe, expect, it } from "vitest";
import { callBudget } from "../../actors/guards/index.js";
import type { CallRecord, GuardCall, GuardContext, GuardDecision } from "../../actors/guard.js";
import { guardCall, guardContext } from "./fixtures.js";

const call = (name: string, id: string): GuardCall => guardCall(name, id);
const ctx = (batch: GuardCall[], history: CallRecord[] = []): GuardContext => guardContext(batch, { history, iteration: 1, now: 10_000 });
const past = (name: string, n: number): CallRecord[] => Array.from({ length: n }, (_, i) => ({ callId: `old_${name}_${i}`, name, at: i }));
/** Every call of the batch, judged the way Preflight does: each against the same context. */
const judgeBatch = (guard: ReturnType<typeof callBudget>, batch: GuardCall[], history: CallRecord[] = []) =>
  batch.map((c) => guard(c, ctx(batch, history)) as GuardDecision);

describe("callBudget", () => {
  it("lets exactly the first 3 calls of a batch of 5 through a per-tool budget of 3", () => {
    const batch = [1, 2, 3, 4, 5].map((i) => call("calculator", `c${i}`));
    const verdicts = judgeBatch(callBudget({ perTool: { calculator: 3 } }), batch);
    expect(verdicts.map((v) => v.decision)).toEqual(["allow", "allow", "allow", "deny", "deny"]);
    expect(verdicts[3]).toEqual({
      decision: "deny",
      reason: "calculator may be called at most 3 times per run; this would be call 4. Answer with what you have.",
    });
  });

  it("counts calls already made in the run (ctx.history)", () => {
    const guard = callBudget({ perTool: { calculator: 3 } });
    const verdicts = judgeBatch(guard, [call("calculator", "a"), call("calculator", "b")], past("calculator", 2));
    expect(verdicts.map((v) => v.decision)).toEqual(["allow", "deny"]);
    expect(verdicts[1]).toMatchObject({ reason: expect.stringContaining("this would be call 4") });
  });

  it("leaves tools without a per-tool limit alone", () => {
    const guard = callBudget({ perTool: { calculator: 1 } });
    expect(judgeBatch(guard, [call("search", "s1"), call("search", "s2")], past("search", 10)).map((v) => v.decision)).toEqual(["allow", "allow"]);
  });

  it("limits the whole run with maxCalls, all tools together", () => {
    const guard = callBudget({ maxCalls: 3 });
    const batch = [call("a", "1"), call("b", "2"), call("c", "3")];
    const verdicts = judgeBatch(guard, batch, past("z", 1));
    expect(verdicts.map((v) => v.decision)).toEqual(["allow", "allow", "deny"]);
    expect(verdicts[2]).toEqual({ decision: "deny", reason: "this run may make at most 3 tool calls; this would be call 4. Answer with what you have." });
  });

  it("does not count calls it denies itself against the run budget", () => {
    // calculator's second call is over its own budget: it will not run, so search still fits in maxCalls 2.
    const guard = callBudget({ maxCalls: 2, perTool: { calculator: 1 } });
    const verdicts = judgeBatch(guard, [call("calculator", "1"), call("calculator", "2"), call("search", "3")]);
    expect(verdicts.map((v) => v.decision)).toEqual(["allow", "deny", "allow"]);
  });

  it("a zero budget forbids the tool outright", () => {
    const [verdict] = judgeBatch(callBudget({ perTool: { search: 0 } }), [call("search", "1")]);
    expect(verdict).toEqual({ decision: "deny", reason: "search may not be called in this run. Answer with what you have." });
  });

  it("does not count a call twice when it is both in the batch and the history", () => {
    const batch = [call("calculator", "a"), call("calculator", "b")];
    const history: CallRecord[] = [{ callId: "a", name: "calculator", at: 0 }];
    expect(judgeBatch(callBudget({ perTool: { calculator: 2 } }), batch, history).map((v) => v.decision)).toEqual(["allow", "allow"]);
  });

  it("rejects bad options, naming the field", () => {
    expect(() => callBudget({})).toThrow(/callBudget: options must set maxCalls, perTool or both/);
    expect(() => callBudget({ maxCalls: -1 })).toThrow(/callBudget: options\.maxCalls is invalid: must be 0 or more/);
    expect(() => callBudget({ perTool: { calculator: 1.5 } })).toThrow(/options\.perTool\.calculator is invalid: must be a whole number/);
    expect(() => callBudget({ maxCall: 3 } as never)).toThrow(/options has unknown key "maxCall" \(known: maxCalls, perTool\)/);
  });
});
