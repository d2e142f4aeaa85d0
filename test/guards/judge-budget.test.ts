import { describe, expect, it } from "vitest";
import { defineGuardrail, type Guardrail, type GuardrailMode } from "../../actors/guardrail.js";
import { human } from "../../actors/messages.js";
import type { ModelClient, ModelRequest } from "../../actors/model-client.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { runAgent } from "../../machines/runner.js";
import { scriptedModel, type ScriptedResponse } from "../../testing/scripted-model.js";

/**
 * An LLM judge called through `ctx.budgeted(judge)` spends the run's money: its usage joins the run's
 * `usage`, and with a budget each of its calls is capped by what the run has left, one at a time, so
 * that the budget holds with judges in it too.
 */

/** A judge guardrail over `judge`: PASS passes, anything else sends feedback. */
function judgeGuardrail(name: string, judge: ModelClient, options: { mode?: GuardrailMode; maxTokens?: number } = {}): Guardrail {
  return defineGuardrail({
    name,
    ...(options.mode ? { mode: options.mode } : {}),
    async check(subject, ctx) {
      const request: ModelRequest = { messages: [human(`Judge: ${subject.text}`)], tools: [], ...(options.maxTokens !== undefined ? { maxTokens: options.maxTokens } : {}) };
      const turn = await ctx.budgeted(judge).complete(request, { signal: ctx.signal });
      return turn.content.startsWith("PASS") ? { verdict: "pass" } : { verdict: "retry", feedback: turn.content };
    },
  });
}

const answer = (content: string, promptTokens: number, completionTokens: number): ScriptedResponse => ({ content, usage: { promptTokens, completionTokens } });

describe("guardrails: a judge's model calls through ctx.budgeted", () => {
  it("count in the run's usage and cost, at the run's prices, whatever the verdict", async () => {
    const model = scriptedModel([answer("first", 100, 10), answer("second", 120, 10)], { model: "agent-model" });
    const judge = scriptedModel([answer("FAIL: too short", 40, 5), answer("PASS", 50, 2)], { model: "judge-model" });
    const machine = createReactMachine({
      modelClient: model,
      outputGuardrails: [judgeGuardrail("judge", judge)],
      config: { pricing: { "agent-model": { input: 1, output: 1 }, "judge-model": { input: 10, output: 10 } } },
      configFile: false,
    });
    const output = await runAgent(machine, { messages: [human("hi")] });
    expect(output.status).toBe("succeeded");
    // The agent's two replies (240 tokens) and the judge's two calls (97), the retry's included.
    expect(output.usage).toMatchObject({ promptTokens: 100 + 120 + 40 + 50, completionTokens: 10 + 10 + 5 + 2, totalTokens: 240 + 97 });
    expect(output.usage.cost).toBeCloseTo((240 * 1 + 97 * 10) / 1_000_000, 12);
  });

  it("count when the judge trips the run too", async () => {
    const judge = scriptedModel([answer("REJECT", 30, 3)]);
    const tripping = defineGuardrail({
      name: "strict",
      async check(_subject, ctx) {
        const turn = await ctx.budgeted(judge).complete({ messages: [human("judge")], tools: [] }, { signal: ctx.signal });
        return { verdict: "trip", reason: turn.content };
      },
    });
    const machine = createReactMachine({ modelClient: scriptedModel([answer("an answer", 10, 1)]), outputGuardrails: [tripping], configFile: false });
    const output = await runAgent(machine, { messages: [human("hi")] });
    expect(output.termination).toMatchObject({ reason: "guardrailTripped", guardrail: "strict", detail: "REJECT" });
    expect(output.usage.totalTokens).toBe(11 + 33);
  });

  it("are capped by what the run has left: the judge's maxTokens is what the budget leaves after its prompt", async () => {
    const model = scriptedModel([answer("an answer", 100, 20)]);
    const judge = scriptedModel([answer("PASS", 30, 1)]);
    const machine = createReactMachine({ modelClient: model, outputGuardrails: [judgeGuardrail("judge", judge, { maxTokens: 500 })], config: { maxBudgetTokens: 400 }, configFile: false });
    const output = await runAgent(machine, { messages: [human("hi")] });
    expect(output.status).toBe("succeeded");
    const cap = judge.requests[0]!.maxTokens!;
    const prompt = judge.requests[0]!.spend!.promptTokens;
    // 400 - 120 spent by the agent leaves 280 for the judge's prompt and answer: the answer gets the rest.
    expect(cap + prompt).toBe(400 - 120);
    expect(cap).toBeLessThan(500);
    expect(output.usage.totalTokens).toBe(120 + 31);
  });

  it("that would cross the budget are not made: the guardrail trips, saying which budget and how to fix it", async () => {
    const model = scriptedModel([answer("a long answer", 390, 8)]);
    const judge = scriptedModel([answer("PASS", 1, 1)]);
    const machine = createReactMachine({ modelClient: model, outputGuardrails: [judgeGuardrail("judge", judge)], config: { maxBudgetTokens: 400 }, configFile: false });
    const output = await runAgent(machine, { messages: [human("hi")] });
    expect(judge.requests).toHaveLength(0);
    expect(output.termination).toMatchObject({ reason: "guardrailTripped", guardrail: "judge" });
    expect(output.termination?.detail).toMatch(/not calling the model: .*config\.maxBudgetTokens/);
    expect(output.usage.totalTokens).toBe(398);
  });

  it("take turns with a budget: two judges side by side never spend the same remainder twice", async () => {
    const model = scriptedModel([answer("an answer", 50, 10)]);
    const calls: string[] = [];
    /** A judge that notes when its calls start and end, answering after a moment. */
    const slowJudge = (name: string, completionTokens: number): ModelClient => {
      const inner = scriptedModel([{ ...answer("PASS", 40, completionTokens), delayMs: 30 }]);
      return {
        description: name,
        complete: async (request, options) => {
          calls.push(`${name} starts, may answer ${request.maxTokens ?? "unbounded"}`);
          const turn = await inner.complete(request, options);
          calls.push(`${name} ends`);
          return turn;
        },
      };
    };
    const machine = createReactMachine({
      modelClient: model,
      outputGuardrails: [judgeGuardrail("a", slowJudge("a", 100), { maxTokens: 1_000 }), judgeGuardrail("b", slowJudge("b", 5), { maxTokens: 1_000 })],
      config: { maxBudgetTokens: 1_000 },
      configFile: false,
    });
    const output = await runAgent(machine, { messages: [human("hi")] });
    expect(output.status).toBe("succeeded");
    // One at a time; the second's cap is what the first left (1000 - 60 - 140, less its own prompt).
    expect(calls.map((c) => c.replace(/\d+$/, "N"))).toEqual(["a starts, may answer N", "a ends", "b starts, may answer N", "b ends"]);
    const [capA, capB] = calls.filter((c) => c.includes("starts")).map((c) => Number(c.split(" ").pop()));
    expect(capA! - capB!).toBe(140);
    expect(output.usage.totalTokens).toBe(60 + 140 + 45);
  });

  it("are refused beside the model call: a parallel input guardrail with a budget must be blocking to call a model", async () => {
    const model = scriptedModel([answer("an answer", 10, 1)]);
    const judge = scriptedModel([answer("PASS", 1, 1)]);
    const machine = createReactMachine({ modelClient: model, inputGuardrails: [judgeGuardrail("judge", judge, { mode: "parallel" })], config: { maxBudgetTokens: 1_000 }, configFile: false });
    const output = await runAgent(machine, { messages: [human("hi")] });
    expect(judge.requests).toHaveLength(0);
    expect(output.termination).toMatchObject({ reason: "guardrailTripped", guardrail: "judge" });
    expect(output.termination?.detail).toContain('make the guardrail blocking (mode: "blocking")');

    // Blocking, the same judge is called, within the budget, and counted.
    const blockingJudge = scriptedModel([answer("PASS", 7, 1)]);
    const blocking = createReactMachine({ modelClient: scriptedModel([answer("an answer", 10, 1)]), inputGuardrails: [judgeGuardrail("judge", blockingJudge)], config: { maxBudgetTokens: 1_000 }, configFile: false });
    const passed = await runAgent(blocking, { messages: [human("hi")] });
    expect(passed.status).toBe("succeeded");
    expect(blockingJudge.requests[0]!.maxTokens).toBeDefined();
    expect(passed.usage.totalTokens).toBe(11 + 8);
  });
});
