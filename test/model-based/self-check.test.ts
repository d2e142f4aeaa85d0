import { describe, expect, it } from "vitest";
import { fromPromise } from "xstate";
import type { PreflightInput, PreflightOutput } from "../../actors/guard.js";
import type { LLMInput } from "../../actors/llm-step.js";
import type { ExecutorInput, ExecutorOutput } from "../../actors/tool-executor.js";
import { reactConfigOf, stateAccessOf } from "../../machines/react-machine.js";
import { InvariantChecker } from "../../testing/model-based-invariants.js";
import { PureStepper, type Microstep } from "../../testing/model-based-pure.js";
import { generateAgentPaths, InvariantViolation, type AgentPath } from "../../testing/model-based.js";
import { createAgent, executed, policy, scripts, tools } from "./fixture.js";

/**
 * Tests of the suite itself: break an invariant on purpose and the checks must notice.
 * Each broken agent is the fixture agent with one implementation swapped through provide().
 */

/** A guard step that skips the guards: everything is allowed, even what must wait for approval. */
const allowEverything = fromPromise<PreflightOutput, PreflightInput>(async ({ input }) => ({
  decisions: input.calls.map((call) => ({ callId: call.id, name: call.name, status: "allowed" as const })),
}));

/** An executor that runs every call whatever its decision; `report` says whether it tells the agent. */
function runEverything(report: boolean) {
  return fromPromise<ExecutorOutput, ExecutorInput>(async ({ input, self, signal }) => {
    const outcomes: ExecutorOutput["outcomes"] = [];
    for (const call of input.calls) {
      if (report) {
        self._parent?.send({ type: "tool.progress", progress: [{ at: Date.now(), event: { type: "tool.call.started", callId: call.id, name: call.name, arguments: call.arguments } }] });
      }
      const tool = tools.find((t) => t.name === call.name);
      let content = "";
      try {
        content = String(await tool?.execute(JSON.parse(call.arguments) as Record<string, unknown>, { signal, callId: call.id, state: {} }));
      } catch (error) {
        content = String(error);
      }
      outcomes.push({ callId: call.id, name: call.name, status: "ok", content, effectTags: [] });
    }
    return { outcomes };
  });
}

const withLabel = (paths: readonly AgentPath[], label: string) => paths.find((p) => p.steps.some((s) => s.label === label) && p.steps.some((s) => s.label.startsWith("tools run")))!;

describe("model-based: breaking an invariant on purpose fails the suite", () => {
  it("a guard step that allows calls which need approval fails the live replay", async () => {
    const { paths, violations } = generateAgentPaths(createAgent().provide({ actors: { guard: allowEverything } }), { scripts, policy, select: "edges" });
    expect(violations).toEqual([]); // the chart itself is fine: only the live guard step is broken
    const path = withLabel(paths, "approve send_email");
    const failure = await path.replay().catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(InvariantViolation);
    expect((failure as InvariantViolation).violations[0]).toMatchObject({
      invariant: "onlyAuthorizedCallsRun",
      message: expect.stringContaining(`(send_email) would run as "allowed" but the guard verdict expected for it is pending`),
    });
  });

  it("the same path passes with the real guard step", async () => {
    const { paths } = generateAgentPaths(createAgent(), { scripts, policy, select: "edges" });
    await expect(withLabel(paths, "approve send_email").replay()).resolves.toBeDefined();
  });

  it("an executor that runs denied calls fails the live replay", async () => {
    const { paths } = generateAgentPaths(createAgent().provide({ actors: { toolExecutor: runEverything(true) } }), { scripts, policy, select: "edges" });
    const failure = await withLabel(paths, "model calls delete_all")
      .replay()
      .catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(InvariantViolation);
    expect((failure as InvariantViolation).message).toContain("tool delete_all (call call_r1_0) started although the call was not allowed or approved");
  });

  it("an executor that runs denied calls silently is caught by comparing what the tools ran with what was authorized", async () => {
    const { paths } = generateAgentPaths(createAgent().provide({ actors: { toolExecutor: runEverything(false) } }), { scripts, policy, select: "edges" });
    executed.length = 0;
    const result = await withLabel(paths, "model calls delete_all").replay();
    // This is the check every live path of react-machine.test.ts makes.
    expect(executed.filter((callId) => !result.authorized.has(callId))).toEqual(["call_r1_0"]);
  });

  it("a machine that goes on to Executing while calls are pending is caught purely", async () => {
    const { paths, violations } = generateAgentPaths(createAgent().provide({ guards: { nonePending: () => true } }), { scripts, policy });
    expect(violations.length).toBeGreaterThan(0);
    expect(violations.every((v) => v.invariant === "onlyAuthorizedCallsRun" && v.message.includes("still pending approval"))).toBe(true);
    const violating = paths.find((p) => p.violations.length > 0)!;
    await expect(violating.replay()).rejects.toThrow(InvariantViolation);
  });

  it("an iteration bound that never stops is caught purely, and the traversal still ends", () => {
    const { violations, paths } = generateAgentPaths(createAgent().provide({ guards: { iterationsLeft: () => true } }), { scripts, policy });
    expect(violations.some((v) => v.invariant === "iterationsWithinLimit" && v.message.includes("above maxIterations 2"))).toBe(true);
    expect(paths.some((p) => p.violations.some((v) => v.invariant === "iterationsWithinLimit"))).toBe(true);
  });
});

describe("model-based: the invariant checker on doctored microsteps", () => {
  const machine = createAgent();
  const access = stateAccessOf(machine)!;
  const config = reactConfigOf(machine)!;
  const stepper = new PureStepper(machine);
  const start = stepper.initial({ runId: "doctored" }).snapshot;
  const ready = stepper.step(start, { type: "tools.ready", tools: start.context.loop.tools });
  const checkAbort = ready.microsteps.find((m) => m.snapshot.matches({ Evaluating: "CheckAbort" }))!;
  const agentLLM = ready.microsteps.at(-1)!;
  const leftover = { id: "old", name: "add", arguments: "{}" };

  it("the real first iteration passes", () => {
    const checker = new InvariantChecker(access, config);
    for (const microstep of ready.microsteps) checker.observe(microstep);
    expect(checker.violations).toEqual([]);
  });

  it("step fields or decisions left over when an iteration starts are caught", () => {
    const checker = new InvariantChecker(access, config);
    const { context } = checkAbort.snapshot;
    const doctored: Microstep = {
      ...checkAbort,
      snapshot: {
        ...checkAbort.snapshot,
        context: {
          state: access.write(context.state, { actions: [leftover] }),
          loop: { ...context.loop, decisions: [{ callId: "old", name: "add", status: "allowed" }] },
        },
      },
    };
    checker.observe(doctored);
    expect(checker.violations.map((v) => v.invariant)).toEqual(["iterationStartsClean", "iterationStartsClean"]);
    expect(checker.violations[0]!.message).toContain(`step field "actions"`);
  });

  it("toolChoice sent after the first round is caught, in the model step's input and in the requests", () => {
    const checker = new InvariantChecker(access, config);
    // The model call AgentLLM asked the step host for, sent again as if on the second round.
    const asked = agentLLM.requests!.find((request) => request.step === "llm")!;
    const real = asked.input as LLMInput;
    const doctored = { step: "llm", input: { ...real, rounds: 1, toolChoice: "required" }, event: { type: "step.request" } };
    const { context } = agentLLM.snapshot;
    checker.observe({
      ...agentLLM,
      requests: [doctored],
      snapshot: { ...agentLLM.snapshot, context: { ...context, state: access.write(context.state, { rounds: 1 }) } },
    });
    expect(checker.violations.map((v) => v.message)).toEqual([
      `toolChoice "required" sent with rounds=1`,
      "extraParams.tool_choice sent with rounds=1",
    ]);
    checker.checkModelRequests([
      { messages: [], tools: [], toolChoice: "required" },
      { messages: [], tools: [], toolChoice: "required" },
    ]);
    expect(checker.violations.at(-1)!.message).toBe(`model request #2 carried toolChoice "required"`);
  });

  it("reasoning that reaches the answer (streamingOutput) is caught; the real machine keeps it out", () => {
    const reasoning = { type: "llm.progress", progress: [{ at: 0, event: { type: "reasoning.delta", delta: "Considering the tools. " } }] };
    const real = stepper.step(agentLLM.snapshot, reasoning);
    const checker = new InvariantChecker(access, config);
    checker.observe(agentLLM);
    for (const microstep of real.microsteps) checker.observe(microstep);
    expect(checker.violations).toEqual([]);
    expect(access.read(real.snapshot.context.state, "streamingOutput")).toBe("");

    const leaked = real.microsteps.at(-1)!;
    const doctored = { ...leaked, snapshot: { ...leaked.snapshot, context: { ...leaked.snapshot.context, state: access.write(leaked.snapshot.context.state, { streamingOutput: "Considering the tools. " }) } } };
    const strict = new InvariantChecker(access, config);
    strict.observe(agentLLM);
    strict.observe(doctored);
    expect(strict.violations).toMatchObject([{ invariant: "reasoningIsNotOutput", message: expect.stringContaining('on progress that streamed "" as text') }]);
  });

  it("a Failed state without a termination is caught", () => {
    const checker = new InvariantChecker(access, config);
    const failed = stepper.step(start, { type: "agent.cancel" }).microsteps.at(-1)!;
    checker.observe({ ...failed, snapshot: { ...failed.snapshot, context: { ...failed.snapshot.context, loop: { ...failed.snapshot.context.loop, termination: null } } } });
    expect(checker.violations).toMatchObject([{ invariant: "failedHasReason", message: "the run is Failed without a termination" }]);
  });
});
