import type { ActorRefFrom } from "xstate";
import type { z } from "zod";
import type { ReActConfig } from "./contract/config.js";
import { initialContext } from "./contract/context.js";
import type { StateAccess } from "./contract/state-access.js";
import { agentSetup } from "./chart/agent-setup.js";
import { attachRuntime, runtimeOf } from "./chart/agent-runtime.js";
import { approvalStates } from "./chart/approval-piece.js";
import { chartBuild } from "./chart/build.js";
import { compactionStates } from "./chart/compaction-piece.js";
import { deadlineWatch, runDeadline } from "./chart/deadline-piece.js";
import { delegationHooks, delegationStates, withNestedAgents } from "./chart/delegation-piece.js";
import { loopRootOn, loopStates, runOutput, toolProvidersInvoke } from "./chart/loop-piece.js";
import { checkOptions, type ReactMachineOptions } from "./chart/machine-options.js";
import type { OutputPlan } from "./chart/output.js";
import { finalResultBranch, outputStates } from "./chart/output-piece.js";
import { inputGuardrailStates, outputGuardrailStates, parallelGuardrailHooks, parallelGuardrailStates } from "./chart/guardrail-piece.js";
import { roundStates } from "./chart/round-piece.js";
import { toolStates } from "./chart/tool-piece.js";

export { ACTOR_NAMES, MachineOptionsError, type ReactMachineOptions } from "./chart/machine-options.js";

/**
 * Build the ReAct agent as an XState machine: LoopUntilSuccess made explicit
 * (Initialising → Evaluating{CheckAbort → ChildRunning} → CheckBudget → Retry | Succeeded | Failed),
 * with the LLM step, the guard preflight and the tool executor as invoked actors.
 *
 * The chart below is the whole structure; each state comes from the piece of machines/chart/ that
 * owns its feature (`*-piece.ts`), and the pieces' actors, actions and guards are registered in
 * `agentSetup` (machines/chart/agent-setup.ts). A piece's optional states are there only with its
 * option; what one piece adds to another's state is passed to that state here.
 */
export function createReactMachine<C = unknown, O extends z.ZodType = z.ZodNever>(options: ReactMachineOptions<C, O>) {
  checkOptions(options);
  const build = chartBuild(options);
  const { features, target } = build;
  // A round, up to the model call: CheckInput → (GuardingInput →) PreparingRound → CheckContext → (Compacting →) AgentLLM, each step only with its option.
  const modelCall = "AgentLLM";
  const contextCheck = features.context ? "CheckContext" : modelCall;
  const planning = features.prepareRound ? "PreparingRound" : contextCheck;
  const roundStart = features.blockingInput ? "CheckInput" : planning;
  // The run has its answer: with a schema it is checked first, then the output guardrails have their say.
  const succeeded = target("Succeeded");
  const guarded = features.outputGuardrails ? "GuardingOutput" : succeeded;
  const done = features.output ? "CheckOutput" : guarded;
  // Parallel input guardrails watch the whole first round; a reply before their verdict waits for it.
  const parallel = parallelGuardrailHooks(build);
  const loop = loopStates(build, { roundStart, done, finalResult: [...parallel.reply, ...finalResultBranch(build)] });
  // What nested agents (agent tools, handoffs) add to the batch's states and the root; nothing without them.
  const nested = delegationHooks(build);
  const tools = toolStates(build, { afterBatch: nested.afterBatch });

  const chart = agentSetup<O>(build).createMachine({
    id: build.name,
    description: "A ReAct agent: reason (the model) → call tools (guarded, maybe approved) → observe → repeat, until the state says done or a limit ends the run.",
    context: ({ input }) => initialContext(input, build.access, build.registry.staticInfo, runDeadline(build)),
    initial: "Initialising",
    invoke: [
      // One actor for the whole run runs its model calls and tool batches (actors/step-host.ts).
      { id: build.childId("steps"), src: "steps" },
      ...toolProvidersInvoke(build, "root"),
      // With config.maxDurationMs, the deadline is watched for the whole run.
      ...deadlineWatch(build),
    ],
    // A nested agent's telemetry is relayed in whatever state the batch is.
    on: loopRootOn({ on: nested.relay }),
    states: {
      Initialising: loop.Initialising,
      Evaluating: {
        ...loop.Evaluating,
        states: {
          CheckAbort: loop.CheckAbort,
          ChildRunning: {
            ...loop.ChildRunning,
            ...(parallel.invoke.length > 0 ? { invoke: parallel.invoke } : {}),
            states: {
              ...inputGuardrailStates(build, { next: planning }),
              ...roundStates(build, { next: contextCheck }),
              ...compactionStates(build, { next: modelCall }),
              AgentLLM: loop.AgentLLM,
              ToolExecutor: {
                ...tools.ToolExecutor,
                states: {
                  Preflight: tools.Preflight,
                  ...approvalStates(build, nested.approval),
                  Executing: tools.Executing,
                  // Agent tools of the batch run one at a time as a nested agent; a handoff hands the run over.
                  ...delegationStates(build),
                },
                // Leaving the batch (done, cancelled, failed) stops a nested agent still running.
                exit: nested.exitBatch,
              },
              ...parallelGuardrailStates(build, { finalResult: build.outputPlan?.tool ? "CheckOutput" : undefined, tools: "ToolExecutor", condition: "StateCondition" }),
              StateCondition: loop.StateCondition,
              ...outputStates(build, { accepted: guarded }),
              ...outputGuardrailStates(build, { accepted: succeeded }),
            },
          },
        },
      },
      CheckBudget: loop.CheckBudget,
      Retry: loop.Retry,
      Succeeded: loop.Succeeded,
      Failed: loop.Failed,
    },
    output: ({ context }) => runOutput<z.infer<O>>(build, context),
  });
  const machine = withNestedAgents(chart, build);
  // One runtime object per machine (machines/chart/agent-runtime.ts): what the chart needs besides itself.
  attachRuntime(machine, { config: build.config, access: build.access, outputPlan: build.outputPlan, tools: build.registry });
  return machine;
}

/** Each machine's structured-output plan, when it has `output` (model-based tests script final outputs from it). */
export function outputPlanOf(machine: { config: object }): OutputPlan | undefined {
  return runtimeOf(machine)?.outputPlan;
}

/** Each machine's resolved config (model-based tests read maxIterations, the token budget and toolChoice). */
export function reactConfigOf(machine: { config: object }): ReActConfig | undefined {
  return runtimeOf(machine)?.config;
}

/** How each machine reads its state (restoring a snapshot checks the saved state against its schema). */
export function stateAccessOf(machine: { config: object }): StateAccess | undefined {
  return runtimeOf(machine)?.access;
}

/** Resolves when every tool provider used by a run has closed (after the run reached a final state or was stopped). */
export function toolProvidersClosed(machine: { config: object }, runId: string): Promise<void> {
  return runtimeOf(machine)?.tools.closed(runId) ?? Promise.resolve();
}

export type ReactMachine = ReturnType<typeof createReactMachine>;
export type ReactAgentRef = ActorRefFrom<ReactMachine>;
