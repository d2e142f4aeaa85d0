import { describe, expect, it } from "vitest";
import { generateAgentPaths, type AgentPath } from "../../testing/model-based.js";
import { config, createAgent, executed, policy, scripts } from "./fixture.js";

/**
 * The ReAct machine, tested from its own chart: one path per edge of the model (every event
 * in every model state), each checked purely on every microstep and then replayed live with
 * the real LLM step, the real guard step running the fixture's guards, and the real executor.
 */

const generated = generateAgentPaths(createAgent(), { scripts, policy, select: "edges" });
const { coverage } = generated;

function runOf(path: AgentPath): Promise<{ ran: string[]; result: Awaited<ReturnType<AgentPath["replay"]>> }> {
  executed.length = 0;
  return path.replay().then((result) => ({ ran: [...executed], result }));
}

describe("model-based: the ReAct machine", () => {
  it("covers every state and every transition of the chart", () => {
    console.log(`model-based coverage of the ReAct machine: ${coverage.text}; ${generated.paths.length} paths`);
    expect(coverage.missing).toEqual([]);
    expect(coverage.coveredStates).toBe(coverage.states);
    expect(coverage.coveredTransitions).toBe(coverage.transitions);
    // The totals come from the chart, not from the paths: a sanity floor for the walk itself.
    expect(coverage.states).toBeGreaterThanOrEqual(14);
    expect(coverage.transitions).toBeGreaterThanOrEqual(25);
  });

  it("breaks no invariant on any microstep of any path", () => {
    expect(generated.violations).toEqual([]);
  });

  it("reaches both final states, every termination reason and the approval states", () => {
    const endings = new Set(generated.paths.map((p) => `${p.finalState.value}${p.finalState.reason ? `:${p.finalState.reason}` : ""}`));
    expect([...endings].sort()).toEqual(
      [
        "Succeeded",
        "Failed:approvalTimeout",
        "Failed:cancelled",
        // A model call refused over a cost budget: any agent may run nested under its caller's grant.
        "Failed:costBudget",
        "Failed:internalError",
        "Failed:maxIterations",
        "Failed:modelError",
        "Failed:tokenBudget",
        "Failed:toolProviderError",
      ].sort(),
    );
    const labels = new Set(generated.paths.flatMap((p) => p.steps.map((s) => s.label)));
    for (const label of ["approve send_email", "reject send_email", "the approval deadline passes", "approve send_email late (refused)"]) {
      expect(labels).toContain(label);
    }
  });

  it("runs an approved call live, and never a rejected or denied one", async () => {
    const approved = generated.paths.find((p) => p.steps.some((s) => s.label === "approve send_email") && p.steps.some((s) => s.label.startsWith("tools run")));
    const rejected = generated.paths.find((p) => p.steps.some((s) => s.label === "reject send_email") && p.steps.some((s) => s.label.startsWith("tools run")));
    const denied = generated.paths.find((p) => p.steps.some((s) => s.label === "model calls delete_all") && p.steps.some((s) => s.label.startsWith("tools run")));
    expect(approved && rejected && denied).toBeTruthy();
    const approvedRun = await runOf(approved!);
    expect(approvedRun.ran).toContain("call_r1_0");
    expect(approvedRun.result.emitted.some((e) => e.type === "tool.call.completed" && e.name === "send_email")).toBe(true);
    const rejectedRun = await runOf(rejected!);
    expect(rejectedRun.ran).not.toContain("call_r1_0");
    const deniedRun = await runOf(denied!);
    expect(deniedRun.ran).not.toContain("call_r1_0");
    expect(deniedRun.result.emitted.some((e) => e.type === "tool.call.denied" && e.name === "delete_all")).toBe(true);
  });

  it("walks paths where the model streams its reasoning, checked on every microstep (reasoningIsNotOutput)", () => {
    expect(generated.paths.some((p) => p.steps.some((s) => s.label === "model streams its reasoning"))).toBe(true);
  });

  it("sends the configured toolChoice on the first model request only", async () => {
    const twoRounds = generated.paths.find((p) => p.finalState.reason === "maxIterations")!;
    const { result } = await runOf(twoRounds);
    expect(result.requests).toHaveLength(2);
    expect(result.requests[0]!.toolChoice).toBe(config.toolChoice);
    expect(result.requests[0]!.extraParams).toMatchObject({ tool_choice: "required", seed: 7 });
    expect(result.requests[1]!.toolChoice).toBeUndefined();
    expect(result.requests[1]!.extraParams).toEqual({ seed: 7 });
  });

  describe("every path, replayed live", () => {
    for (const path of generated.paths) {
      it(path.description, async () => {
        const { ran, result } = await runOf(path);
        expect(result.output.status).toBe(path.finalState.value === "Succeeded" ? "succeeded" : "failed");
        expect(result.output.termination?.reason).toBe(path.finalState.reason);
        expect(result.output.iterations).toBe(path.finalState.iterations);
        // What the tools really ran, against what the checker saw allowed or approved.
        for (const callId of ran) expect([...result.authorized]).toContain(callId);
      });
    }
  });
});
