import { setup } from "xstate";
import type { z } from "zod";
import type { AgentContext, AgentInput, AgentOutput } from "../contract/context.js";
import type { AgentEmitted, AgentEvent } from "../contract/events.js";
import { approvalImplementation } from "./approval-piece.js";
import type { ChartBuild } from "./build.js";
import { compactionImplementation } from "./compaction-piece.js";
import { cutOffImplementation } from "./cut-off-piece.js";
import { deadlineImplementation } from "./deadline-piece.js";
import { delegationImplementation } from "./delegation-piece.js";
import { guardrailImplementation } from "./guardrail-piece.js";
import { loopImplementation } from "./loop-piece.js";
import { outputImplementation } from "./output-piece.js";
import { roundImplementation } from "./round-piece.js";
import { toolImplementation } from "./tool-piece.js";

/**
 * The machine's `setup()`: its types, and every piece's invoked actors, named actions and named
 * guards under one roof. Every piece registers its implementations whether or not the agent has its
 * states (the names are the chart's vocabulary, and `machine.provide()` can swap any of them).
 * A new piece adds its implementation here, one spread per kind.
 */
export function agentSetup<O extends z.ZodType>(build: ChartBuild) {
  const loop = loopImplementation(build);
  const tools = toolImplementation(build);
  const approval = approvalImplementation(build);
  const delegation = delegationImplementation(build);
  const output = outputImplementation(build);
  const compaction = compactionImplementation(build);
  const round = roundImplementation(build);
  const guardrails = guardrailImplementation(build);
  const deadline = deadlineImplementation(build);
  const cutOff = cutOffImplementation();
  return setup({
    types: {
      context: {} as AgentContext,
      events: {} as AgentEvent,
      // Optional, so that `createActor(machine, { snapshot })` restores a run without a dummy input.
      input: {} as AgentInput | void,
      output: {} as AgentOutput<z.infer<O>>,
      emitted: {} as AgentEmitted,
    },
    actors: { ...loop.actors, ...tools.actors, ...approval.actors, ...compaction.actors, ...guardrails.actors, ...deadline.actors },
    actions: { ...loop.actions, ...tools.actions, ...approval.actions, ...delegation.actions, ...output.actions, ...compaction.actions, ...round.actions, ...guardrails.actions, ...cutOff.actions },
    guards: { ...loop.guards, ...approval.guards, ...delegation.guards, ...output.guards, ...compaction.guards, ...guardrails.guards },
  });
}

/** The agent's setup, as the pieces' state configs are typed against it. */
export type AgentSetup = ReturnType<typeof agentSetup<z.ZodType>>;
