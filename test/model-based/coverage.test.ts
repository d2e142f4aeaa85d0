import { describe, expect, it } from "vitest";
import { createMachine } from "xstate";
import { readChart } from "../../testing/model-based-chart.js";
import { generateAgentPaths, type Policy } from "../../testing/model-based.js";
import { config, createAgent, policy, scripts } from "./fixture.js";

/** Coverage is counted against the chart itself, so what no path reaches is named, never hidden. */

describe("model-based: what there is to cover", () => {
  it("reads every state node and every transition alternative from the machine definition", () => {
    const toy = createMachine({
      id: "toy",
      initial: "a",
      on: { RESET: ".a" },
      states: {
        a: { on: { GO: [{ guard: () => false, target: "b" }, { target: "c" }] } },
        b: { always: "c" },
        c: { invoke: { id: "job", src: "job", onDone: "a", onError: "b" } },
      },
    });
    const chart = readChart(toy);
    expect(chart.states.map((s) => s.id)).toEqual(["toy.a", "toy.b", "toy.c"]);
    expect(chart.transitions.map((t) => t.key)).toEqual(["toy RESET[0]", "toy.a GO[0]", "toy.a GO[1]", "toy.b always[0]", "toy.c done(job)[0]", "toy.c error(job)[0]"]);
    expect(chart.transitions[1]!.label).toBe("toy.a --GO [inline guard]--> toy.b");
  });

  it("holds the ReAct loop's own transitions, guarded alternatives apart", () => {
    const keys = readChart(createAgent()).transitions.map((t) => t.key);
    expect(keys).toEqual(
      expect.arrayContaining([
        "ReActAgent agent.cancel[0]",
        "ReActAgent tools.failed[0]",
        "ReActAgent.Initialising tools.ready[0]",
        "ReActAgent.Evaluating.CheckAbort always[0]",
        "ReActAgent.Evaluating.CheckAbort always[1]",
        "ReActAgent.Evaluating.ChildRunning.AgentLLM llm.done[0]",
        "ReActAgent.Evaluating.ChildRunning.AgentLLM llm.done[1]",
        "ReActAgent.Evaluating.ChildRunning.AgentLLM llm.error[0]",
        "ReActAgent.Evaluating.ChildRunning.ToolExecutor.AwaitingApproval done(approvalTimer)[1]",
        "ReActAgent.CheckBudget always[1]",
        "ReActAgent.Retry always[0]",
      ]),
    );
  });
});

describe("model-based: what no path reaches is reported missing", () => {
  it("without a token budget the budget check can never fire", () => {
    const { maxBudgetTokens: _unused, ...noBudget } = config;
    const { coverage } = generateAgentPaths(createAgent({ config: noBudget }), { scripts, policy });
    expect(coverage.coveredTransitions).toBe(coverage.transitions - 1);
    expect(coverage.missing).toEqual(["transition ReActAgent.Evaluating.CheckAbort --always [budgetSpent]--> ReActAgent.Failed"]);
    expect(coverage.text).toMatch(/^states 14\/14 \(100%\), transitions \d+\/\d+ \(9\d\.\d%\)$/);
  });

  it("a model that never calls tools leaves the tool states and their transitions uncovered", () => {
    const { coverage } = generateAgentPaths(createAgent(), { scripts: [{ content: "Hello." }] });
    expect(coverage.missing).toEqual(
      expect.arrayContaining([
        "state ReActAgent.Evaluating.ChildRunning.ToolExecutor",
        "state ReActAgent.Evaluating.ChildRunning.ToolExecutor.Preflight",
        "state ReActAgent.Evaluating.ChildRunning.ToolExecutor.AwaitingApproval",
        "state ReActAgent.Evaluating.ChildRunning.ToolExecutor.Executing",
        "state ReActAgent.Retry",
      ]),
    );
    expect(coverage.coveredStates).toBeLessThan(coverage.states);
  });
});

describe("model-based: other agents", () => {
  it("follows a renamed, namespaced agent (child ids and state paths change)", async () => {
    const machine = createAgent({ name: "Helper", namespace: "helper" });
    const { coverage, paths, violations } = generateAgentPaths(machine, { scripts, policy });
    expect(violations).toEqual([]);
    expect(coverage.missing).toEqual([]);
    for (const path of paths) {
      const { output } = await path.replay();
      expect(output.termination?.reason).toBe(path.finalState.reason);
      expect(output.state["helper"]).toBeDefined();
    }
  });

  it("says what went wrong when the machine is not a ReAct machine", () => {
    const other = createMachine({ id: "other" });
    expect(() => generateAgentPaths(other as unknown as ReturnType<typeof createAgent>)).toThrow(/must be made by createReactMachine/);
  });

  it("names the option that is wrong", () => {
    expect(() => generateAgentPaths(createAgent(), { scripts: [{ toolCalls: [{ name: "", arguments: {} }] }] })).toThrow(/options\.scripts\.0\.toolCalls\.0\.name/);
    expect(() => generateAgentPaths(createAgent(), { select: "all" as "edges" })).toThrow(/options\.select/);
    const sloppy = (() => ({ verdict: "yes" })) as unknown as Policy;
    expect(() => generateAgentPaths(createAgent(), { scripts, policy: sloppy })).toThrow(/options\.policy returned \{"verdict":"yes"\} for add; return \{ decision/);
  });

  it("stops with advice when the model grows past the limit", () => {
    expect(() => generateAgentPaths(createAgent(), { scripts, policy, limit: 50 })).toThrow(/more than 50 edges; pass fewer scripts, lower config.maxIterations, or raise options.limit/);
  });
});
