import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createReactMachine } from "../../machines/react-machine.js";
import type { RoundView } from "../../machines/chart/prepare-round.js";
import { scriptedModel } from "../../testing/scripted-model.js";
import { generateAgentPaths } from "../../testing/model-based.js";
import { defineTool } from "../../tools/tool.js";

/**
 * The states that exist only with their options (PreparingRound, CheckContext, Compacting,
 * CheckOutput) are covered like the rest of the chart: every state and transition, replayed live.
 * A context limit of 1 token with keepLast 0 makes compaction depend on the iteration only
 * (anything after the task message is compacted), which keeps the model's coarse states exact.
 */

const tools = [
  defineTool({ name: "add", description: "Add two numbers", parameters: z.object({ a: z.number(), b: z.number() }), execute: ({ a, b }) => a + b }),
  defineTool({ name: "lookup", description: "Look something up", parameters: z.object({ key: z.string() }), execute: ({ key }) => `value of ${key}` }),
];
const Answer = z.object({ answer: z.string(), confidence: z.number() });

/** Round 1 offers only `add` (so a `lookup` call there is an unknown tool); later rounds switch model and force a tool choice. */
const prepareRound = (view: RoundView) => (view.rounds === 0 ? { tools: ["add"] } : { model: "big-model", toolChoice: "auto" as const });

describe("model-based: structured output (tool), trimming, prepareRound", () => {
  const machine = createReactMachine({
    modelClient: scriptedModel([]),
    tools,
    output: Answer,
    prepareRound,
    config: { maxIterations: 2, outputStrategy: "tool", outputRetries: 1, maxBudgetTokens: 1_000, context: { maxTokens: 1, strategy: "trim", keepLast: 0 } },
    configFile: false,
  });
  const { paths, coverage, violations } = generateAgentPaths(machine);

  it("covers every state and transition, the new ones included", () => {
    console.log(`model-based coverage with output/context/prepareRound: ${coverage.text}; ${paths.length} paths`);
    expect(violations).toEqual([]);
    expect(coverage.missing).toEqual([]);
    const states = new Set(paths.flatMap((p) => p.steps.map((s) => s.label)));
    expect([...states].some((label) => label.includes("old messages trimmed"))).toBe(true);
    expect(paths.some((p) => p.finalState.reason === "invalidOutput")).toBe(true);
  });

  for (const path of paths) {
    it(path.description, async () => {
      const { output, requests } = await path.replay();
      expect(output.status).toBe(path.finalState.value === "Succeeded" ? "succeeded" : "failed");
      expect(output.termination?.reason).toBe(path.finalState.reason);
      if (output.status === "succeeded" && output.finalAnswer !== null && requests.some((r) => r.tools.some((t) => t.function.name === "final_result"))) {
        // A run that succeeded through CheckOutput carries a value that fits the schema.
        if (output.output !== undefined) expect(Answer.safeParse(output.output).success).toBe(true);
      }
      // The first round offered only `add` (plus the final-result tool); later rounds everything, on the planned model.
      if (requests[0]) expect(requests[0].tools.map((t) => t.function.name)).toEqual(["add", "final_result"]);
      for (const request of requests.slice(1)) expect(request.model).toBe("big-model");
    });
  }
});

describe("model-based: every edge of the optional states, replayed live", () => {
  it("replays every edge path of the tool-output, trimming, prepareRound agent to the same final state", async () => {
    const machine = createReactMachine({
      modelClient: scriptedModel([]),
      tools,
      // A constraint keeps the guard step and AwaitingApproval in this chart (an agent without one has
      // neither); the paths script its verdicts, approval deadlines included.
      constraints: [() => ({ decision: "allow" })],
      output: Answer,
      prepareRound,
      config: { maxIterations: 2, outputStrategy: "tool", outputRetries: 1, maxBudgetTokens: 1_000, context: { maxTokens: 1, strategy: "trim", keepLast: 0 } },
      configFile: false,
    });
    const everyEdge = generateAgentPaths(machine, { select: "edges" });
    expect(everyEdge.violations).toEqual([]);
    expect(everyEdge.coverage.missing).toEqual([]);
    const reasons = new Set<string>();
    for (const path of everyEdge.paths) {
      const { output } = await path.replay();
      expect(output.termination?.reason, path.description).toBe(path.finalState.reason);
      reasons.add(output.termination?.reason ?? "succeeded");
    }
    expect(reasons).toEqual(new Set(["succeeded", "invalidOutput", "maxIterations", "modelError", "tokenBudget", "costBudget", "cancelled", "toolProviderError", "internalError", "approvalTimeout"]));
  });
});

describe("model-based: structured output (native), summarizing", () => {
  const machine = createReactMachine({
    modelClient: scriptedModel([]),
    tools,
    output: Answer,
    config: { maxIterations: 2, outputStrategy: "native", outputRetries: 1, maxBudgetTokens: 1_000, context: { maxTokens: 1, strategy: "summarize", keepLast: 0 } },
    configFile: false,
  });
  // No policy: every batch is tried allowed, denied and pending, so the approval states are covered too.
  const { paths, coverage, violations } = generateAgentPaths(machine);

  it("covers every state and transition", () => {
    console.log(`model-based coverage with native output and summaries: ${coverage.text}; ${paths.length} paths`);
    expect(violations).toEqual([]);
    expect(coverage.missing).toEqual([]);
  });

  for (const path of paths) {
    it(path.description, async () => {
      const { output, requests } = await path.replay();
      expect(output.termination?.reason).toBe(path.finalState.reason);
      for (const request of requests) expect((request.extraParams?.["response_format"] as { type?: string } | undefined)?.type).toBe("json_schema");
      if (output.status === "succeeded") expect(Answer.parse(output.output)).toEqual(output.output);
    });
  }
});
