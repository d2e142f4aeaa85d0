import type { Message } from "../../actors/messages.js";
import type { Usage } from "../../actors/usage.js";
import type { AgentOutput } from "../contract/agent-output.js";
import type { AgentContext } from "../contract/context.js";
import type { StateAccess } from "../contract/state-access.js";

/** The fields of a run's output that the context alone gives: everything but its status and what only an ended run has. */
export type RunOutputFields = Pick<AgentOutput, "finalAnswer" | "messages" | "rounds" | "usage" | "toolEffects" | "iterations" | "runId" | "state">;

/**
 * Read from the context through the agent's namespace and keys: the machine's output at a final
 * state, and `runAgent`'s "awaitingApproval" output of a run that waits for a person, share them.
 */
export function runOutputFields(context: AgentContext, access: StateAccess): RunOutputFields {
  const read = <T>(field: string) => access.read<T>(context.state, field);
  return {
    finalAnswer: read<string | null>("finalAnswer") ?? null,
    messages: read<Message[]>("messages"),
    rounds: read<number>("rounds"),
    usage: read<Usage>("usage"),
    toolEffects: read<string[]>("toolEffects"),
    iterations: context.loop.iteration,
    runId: context.loop.runId,
    state: context.state,
  };
}
