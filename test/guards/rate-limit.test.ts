import { describe, expect, it } from "vitest";
import { rateLimit } from "../../actors/guards/index.js";
import { formatDuration } from "../../actors/guards/rate-limit.js";
import type { CallRecord, GuardCall, GuardContext, GuardDecision } from "../../actors/guard.js";
import { guardCall, guardContext } from "./fixtures.js";

const call = (name: string, id: string): GuardCall => guardCall(name, id);
const ctx = (batch: GuardCall[], history: CallRecord[], now: number): GuardContext => guardContext(batch, { history, now });
const at = (name: string, ...times: number[]): CallRecord[] => times.map((t, i) => ({ callId: `${name}_${t}_${i}`, name, at: t }));
const judge = (guard: ReturnType<typeof rateLimit>, batch: GuardCall[], history: CallRecord[], now: number) =>
  batch.map((c) => guard(c, ctx(batch, history, now)) as GuardDecision);

describe("rateLimit", () => {
  const twoPerSecond = rateLimit({ tool: "search", maxCalls: 2, windowMs: 1_000 });

  it("denies a call when the window already holds maxCalls calls, and says when a slot frees up", () => {
    const [verdict] = judge(twoPerSecond, [call("search", "s")], at("search", 9_400, 9_700), 10_000);
    expect(verdict).toEqual({
      decision: "deny",
      reason:
        "search may be called at most 2 times per 1 s; it was already called 2 times in the last 1 s. " +
        "It can be called again in 400 ms; meanwhile use other tools or answer with what you have.",
    });
  });

  it("slides: calls older than the window no longer count", () => {
    // 9_000 left the window exactly at 10_000; only 9_700 is inside.
    expect(judge(twoPerSecond, [call("search", "s")], at("search", 9_000, 9_700), 10_000)[0]).toEqual({ decision: "allow" });
    expect(judge(twoPerSecond, [call("search", "s")], at("search", 9_001, 9_700), 10_000)[0]).toMatchObject({ decision: "deny" });
  });

  it("counts earlier calls of the same batch as starting now", () => {
    const batch = [call("search", "1"), call("search", "2"), call("search", "3")];
    const verdicts = judge(twoPerSecond, batch, [], 10_000);
    expect(verdicts.map((v) => v.decision)).toEqual(["allow", "allow", "deny"]);
    expect(verdicts[2]).toMatchObject({ reason: expect.stringContaining("It can be called again in 1 s") });
  });

  it("ignores other tools, and limits each listed tool on its own by default", () => {
    const guard = rateLimit({ tools: ["search", "fetch"], maxCalls: 1, windowMs: 60_000 });
    const history = at("search", 5_000);
    const verdicts = judge(guard, [call("calculator", "c"), call("fetch", "f"), call("search", "s")], history, 10_000);
    expect(verdicts.map((v) => v.decision)).toEqual(["allow", "allow", "deny"]);
    expect(verdicts[2]).toMatchObject({ reason: expect.stringMatching(/^search may be called at most 1 time per 1 min; .* again in 55 s;/) });
  });

  it("with shared: true, counts the listed tools together against one limit", () => {
    const guard = rateLimit({ tools: ["search", "fetch"], maxCalls: 2, windowMs: 60_000, shared: true });
    const verdicts = judge(guard, [call("fetch", "f"), call("search", "s")], at("search", 5_000), 10_000);
    expect(verdicts.map((v) => v.decision)).toEqual(["allow", "deny"]);
    expect(verdicts[1]).toMatchObject({ reason: expect.stringMatching(/^search, fetch together may be called at most 2 times per 1 min; they were already called 2 times/) });
  });

  it("formats durations for the model", () => {
    expect([formatDuration(1), formatDuration(999.2), formatDuration(1_500), formatDuration(90_000), formatDuration(7_200_000)]).toEqual([
      "1 ms",
      "1 s",
      "1.5 s",
      "1.5 min",
      "2 h",
    ]);
  });

  it("rejects bad options, naming the field", () => {
    expect(() => rateLimit({ maxCalls: 1, windowMs: 1 })).toThrow(/rateLimit: options must set exactly one of tool .* or tools/);
    expect(() => rateLimit({ tool: "a", tools: ["b"], maxCalls: 1, windowMs: 1 })).toThrow(/exactly one of tool/);
    expect(() => rateLimit({ tool: "a", maxCalls: 0, windowMs: 1 })).toThrow(/options\.maxCalls is invalid: must be at least 1/);
    expect(() => rateLimit({ tool: "a", maxCalls: 1, windowMs: 0 })).toThrow(/options\.windowMs is invalid: must be a positive number of milliseconds/);
    expect(() => rateLimit({ tool: "a", maxCalls: 1 } as never)).toThrow(/options\.windowMs is invalid/);
  });
});
