import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from "vitest";
import { z } from "zod";
import { requireApproval } from "../../actors/guards/index.js";
import { resolveModelClient } from "../../actors/openai/openai-model-client.js";
import { createReactMachine } from "../../machines/react-machine.js";
import type { OpenAIServer } from "../../testing/openai-server.js";
import { EvalDefinitionError, formatEvalReport, runEvals, type EvalCase, type EvalExpectation } from "../../testing.js";
import { defineTool } from "../../tools/tool.js";
import { scriptMessage, startScriptServer, type RunScript } from "../queue/script-model.js";

/**
 * Evals over a real run: the agent's model is the loopback server answering each case from the script
 * in its message (tool calls, then an answer), through the official client. Each case is checked for
 * its answer and its trajectory: its tool calls, and the states of the chart it went through.
 */

let server: OpenAIServer;
beforeAll(async () => {
  server = await startScriptServer();
});
afterAll(async () => {
  await server?.close();
});

const tool = (name: "record" | "pay", effectTags: string[] = []) =>
  defineTool({ name, description: `${name} a note`, parameters: z.object({ note: z.string() }), effectTags, execute: ({ note }) => `${name}ed ${note}` });

/** Pay needs a person's approval, and the run has no one to ask: a case that pays waits (awaitingApproval). */
const agent = () =>
  createReactMachine({
    modelClient: resolveModelClient({ baseURL: server.baseURL, apiKey: "k", model: "scripted", stream: false, resilience: { maxRetries: 0 } }),
    tools: [tool("record"), tool("pay", ["payment"])],
    constraints: [requireApproval({ effectTags: ["payment"] })],
    configFile: false,
  });

const input = (script: RunScript) => ({ messages: [scriptMessage(script)] });

describe("runEvals", () => {
  it("passes the cases whose answer and trajectory hold, and says of the others, in a sentence each, what did not", async () => {
    const cases: EvalCase[] = [
      {
        name: "records twice, then answers",
        input: input({ calls: [{ name: "record", note: "a" }, { name: "record", note: "b" }], answer: "Two notes recorded." }),
        expect: { status: "succeeded", answer: /two notes/i, tools: ["record", "record"], toolOrder: "exact", visits: ["Executing"], avoids: ["AwaitingApproval"], maxRounds: 3 },
      },
      {
        name: "asks a person before paying",
        input: input({ calls: [{ name: "pay", note: "rent" }], answer: "Paid." }),
        expect: { status: "awaitingApproval", visits: ["AwaitingApproval"], notTools: ["record"] },
      },
      {
        name: "expects what did not happen",
        input: input({ calls: [{ name: "record", note: "x" }], answer: "Done." }),
        expect: { status: "failed", answer: "finished", tools: ["pay"], notTools: ["record"], visits: ["AwaitingApproval"], maxTokens: 10 },
      },
    ];
    const ended: string[] = [];
    const report = await runEvals(agent(), cases, { concurrency: 2, onResult: (result) => ended.push(result.name) });
    // Each case was told as it ended, whatever the order; the report keeps the cases' order.
    expect([...ended].sort()).toEqual(cases.map((c) => c.name).sort());
    expect(report.results.map((r) => [r.name, r.pass])).toEqual([
      ["records twice, then answers", true],
      ["asks a person before paying", true],
      ["expects what did not happen", false],
    ]);
    expect(report).toMatchObject({ passed: 2, failed: 1 });
    expect(report.results[2]!.failures).toEqual([
      "the run ended succeeded, not failed",
      'the answer does not contain "finished": "Done."',
      "the tool calls [record] do not hold [pay] in that order",
      "it called [record], which it should not",
      "it never entered AwaitingApproval",
      "it used 30 tokens, more than 10",
    ]);
    // The trajectory: the chart's states in order, and the calls with how they ended.
    const first = report.results[0]!.trajectory;
    expect(first.toolCalls.map((c) => [c.name, c.outcome])).toEqual([
      ["record", "completed"],
      ["record", "completed"],
    ]);
    expect(first.states[0]).toBe("Initialising");
    expect(first.states.filter((s) => s.endsWith("AgentLLM"))).toHaveLength(3);
    expect(first.states.at(-1)).toBe("Succeeded");
    expect(report.results[1]!.trajectory.toolCalls).toEqual([]);
    const text = formatEvalReport(report);
    expect(text).toMatch(/^✓ records twice, then answers \(\d+ ms, 3 rounds, 45 tokens\)$/m);
    expect(text).toContain("✗ expects what did not happen");
    expect(text).toContain("    it never entered AwaitingApproval");
    expect(text.split("\n").at(-1)).toBe("2 of 3 cases passed");
  });

  it("checks tool order three ways: in order with others between, exactly, and in any order", async () => {
    const calls = [{ name: "record" as const, note: "1" }, { name: "pay" as const, note: "2" }, { name: "record" as const, note: "3" }];
    const approveAll = { runOptions: { onApproval: () => ({ approve: true as const }) } };
    const run = (expectation: EvalExpectation) => runEvals(agent(), [{ name: "case", input: input({ calls, answer: "ok" }), expect: expectation }], approveAll);
    const verdicts = await Promise.all(
      [
        { tools: ["record", "record"] },
        { tools: ["pay", "record"] },
        { tools: ["record", "record", "pay"] },
        { tools: ["record", "pay", "record"], toolOrder: "exact" as const },
        { tools: ["record", "pay"], toolOrder: "exact" as const },
        { tools: ["record", "record", "pay"], toolOrder: "anyOrder" as const },
        { tools: ["pay", "pay"], toolOrder: "anyOrder" as const },
      ].map(async (expectation) => (await run(expectation)).results[0]!),
    );
    expect(verdicts.map((v) => v.pass)).toEqual([true, true, false, true, false, true, false]);
    expect(verdicts[6]!.failures).toEqual(["the tool calls [record, pay, record] lack [pay]"]);
    // The approval went through a person (onApproval): the run entered the waiting state on the way.
    expect(verdicts[0]!.trajectory.states.some((s) => s.endsWith("AwaitingApproval"))).toBe(true);
  });

  it("asks an answer check that answers later (an LLM judge), and says when it says no or throws", async () => {
    const judged: string[] = [];
    const judge = async (answer: string) => (judged.push(answer), await new Promise<boolean>((resolve) => setTimeout(() => resolve(answer.includes("recorded")), 5)));
    const cases: EvalCase[] = [
      { name: "judged yes", input: input({ calls: [], answer: "All recorded." }), expect: { answer: judge } },
      { name: "judged no", input: input({ calls: [], answer: "Nothing." }), expect: { answer: judge } },
      { name: "judge broke", input: input({ calls: [], answer: "Fine." }), expect: { answer: () => Promise.reject(new Error("the judge's endpoint is down")) } },
    ];
    const report = await runEvals(agent(), cases);
    expect(judged.sort()).toEqual(["All recorded.", "Nothing."]);
    expect(report.results.map((r) => r.failures)).toEqual([[], ['the answer check said no: "Nothing."'], ["the answer check threw: the judge's endpoint is down"]]);
  });

  it("refuses a case it cannot check before running any, naming the field and the fix", async () => {
    const machine = agent();
    const ok: EvalCase = { name: "fine", input: "hello", expect: {} };
    await expect(runEvals(machine, [ok, { name: "typo", input: "hi", expect: { visits: ["AwaitingAproval"] } }])).rejects.toThrow(
      /cases\[1\]\.expect\.visits names "AwaitingAproval", but the agent's chart has no state "AwaitingAproval"/,
    );
    await expect(runEvals(machine, [ok, { ...ok }])).rejects.toThrow(/cases\[1\]\.name repeats "fine"/);
    await expect(runEvals(machine, [{ name: "bad", input: "hi", expect: { toolOrder: "sorted" } } as unknown as EvalCase])).rejects.toThrow(/cases\[0\]\.expect\.toolOrder/);
    await expect(runEvals(machine, [{ name: "bad", input: "hi", expect: { answers: "x" } } as unknown as EvalCase])).rejects.toThrow(EvalDefinitionError);
    await expect(runEvals(machine, [ok], { concurrency: 0 })).rejects.toThrow(/options\.concurrency must be a whole number of at least 1/);
    await expect(runEvals(machine, [ok, { name: "robot", input: { messages: [{ role: "robot", content: "hi" }] }, expect: {} } as unknown as EvalCase])).rejects.toThrow(/cases\[1\]\.input\.messages\.0/);
    // Nothing ran: the server saw no request for these.
    expect(server.requests.filter((r) => JSON.stringify(r.body).includes("hello"))).toEqual([]);
  });

  it("types its expectations from their schema", () => {
    expectTypeOf<EvalExpectation["visits"]>().toEqualTypeOf<string[] | undefined>();
    expectTypeOf<EvalExpectation["answer"]>().toEqualTypeOf<string | RegExp | ((answer: string) => boolean | Promise<boolean>) | undefined>();
    expectTypeOf<EvalExpectation["status"]>().toEqualTypeOf<"running" | "awaitingApproval" | "succeeded" | "failed" | undefined>();
  });
});
