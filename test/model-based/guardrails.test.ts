import { describe, expect, it } from "vitest";
import { z } from "zod";
import { blocklist, maxLength } from "../../actors/guardrails-builtin.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { scriptedModel } from "../../testing/scripted-model.js";
import { generateAgentPaths } from "../../testing/model-based.js";
import { defineTool } from "../../tools/tool.js";

/**
 * The states and transitions guardrails, budgets and deadlines add (CheckInput, GuardingInput,
 * AwaitingInputCheck, GuardingOutput; the cost budget's checks; the refused calls; the deadline
 * from anywhere) are covered like the rest of the chart: every state and transition, each path
 * replayed live. The paths play the guardrails' verdicts (pass, trip, feedback, a crash) and the
 * deadline timer; the `guardrailsFirst` invariant holds on every microstep.
 */

const add = defineTool({ name: "add", description: "Add two numbers", parameters: z.object({ a: z.number(), b: z.number() }), execute: ({ a, b }) => a + b });
const Answer = z.object({ answer: z.string() });
// Dear enough that the cost budget is spent (1,000 prompt tokens) well before the token budget.
const pricing = { scripted: { input: 1_000, output: 2_000 } };

function guardedAgent(options: { output?: boolean; summarize?: boolean } = {}) {
  return createReactMachine({
    modelClient: scriptedModel([]),
    tools: [add],
    inputGuardrails: [blocklist(["forbidden"]), maxLength(10_000, { name: "parallelLength", mode: "parallel" })],
    outputGuardrails: [maxLength(2_000, { onHit: "retry" })],
    ...(options.output ? { output: Answer, config: undefined } : {}),
    config: {
      maxIterations: 2,
      maxBudgetTokens: 5_000,
      maxBudgetCost: 1,
      pricing,
      maxDurationMs: 60_000,
      // Summaries count toward both budgets: Compacting's refusals (token and cost) are transitions too.
      ...(options.summarize ? { context: { maxTokens: 1, strategy: "summarize" as const, keepLast: 0 } } : {}),
      ...(options.output ? { outputStrategy: "tool" as const, outputRetries: 1 } : {}),
    },
    configFile: false,
  });
}

describe.each([
  { name: "input, parallel and output guardrails, a cost budget and a deadline", output: false },
  { name: "the same with a structured output (a final result that waits for the parallel guardrails)", output: true },
  { name: "the same with summaries under both budgets", output: false, summarize: true },
])("model-based: $name", ({ output, summarize }) => {
  const machine = guardedAgent({ output, ...(summarize ? { summarize } : {}) });
  const { paths, coverage, violations } = generateAgentPaths(machine);

  it("covers every state and transition", () => {
    console.log(`model-based coverage with guardrails (output: ${output}, summaries: ${summarize === true}): ${coverage.text}; ${paths.length} paths`);
    expect(violations).toEqual([]);
    expect(coverage.missing, JSON.stringify(coverage.missing)).toEqual([]);
    const labels = new Set(paths.flatMap((p) => p.steps.map((s) => s.label)));
    for (const label of ["input guardrails trip", "parallel input guardrails send feedback", "output guardrails pass", "the run's deadline passes"]) {
      expect([...labels], label).toContain(label);
    }
    const reasons = new Set(paths.map((p) => p.finalState.reason));
    for (const reason of ["guardrailTripped", "deadline", "costBudget", "tokenBudget"]) expect([...reasons], reason).toContain(reason);
    if (summarize) {
      for (const label of ["summary refused: it would cross the token budget", "summary refused: it would cross the cost budget"]) expect([...labels], label).toContain(label);
    }
  });

  for (const path of paths) {
    it(path.description, async () => {
      const { output: result, emitted } = await path.replay();
      expect(result.termination?.reason).toBe(path.finalState.reason);
      if (result.termination?.reason === "guardrailTripped") {
        expect(result.termination.guardrail).toBeTypeOf("string");
        expect(emitted.some((e) => e.type === "guardrail.tripped")).toBe(true);
      }
    });
  }
});
