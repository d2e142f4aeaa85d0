import { z } from "zod";
import { ToolCallSchema } from "../../actors/messages.js";
import { ToolOutcomeSchema } from "../../actors/tool-outcome.js";
import { builtOnce } from "../../tools/built-once.js";
import { PendingApprovalSchema } from "./approvals.js";

/**
 * `loop.delegation`: where the calls of a batch that run in nested agents (agentTool, handoff) stand.
 * Plain JSON, saved in every snapshot taken while a nested agent works; its updates are in
 * machines/chart/delegation.ts.
 */

export const RunningAgentSchema = builtOnce(() =>
  z.object({
    callId: z.string(),
    name: z.string(),
    arguments: z.string(),
    /** The nested agent's machine name (the `agent` of the agentPath entry this level adds). */
    agent: z.string(),
    kind: z.enum(["agent", "handoff"]),
    startedAt: z.number(),
    /** Handoff: how many messages were carried over (the target's later ones come back). */
    carried: z.number().int().min(0),
  }),
);

/** Checked when a snapshot is restored (`persistence.ts`); built then, not on `import "jianmu"`. */
export const DelegationSchema = builtOnce(() =>
  z.object({
    /** Outcomes of the batch so far (the executor's, then each finished agent call's), applied together in call order. */
    outcomes: z.array(ToolOutcomeSchema),
    /** Agent-tool calls not started yet, in call order. */
    queue: z.array(ToolCallSchema),
    /** The handoff to take once the batch is done (the first of the reply). */
    handoff: ToolCallSchema.nullable(),
    /** The nested agent running now. */
    current: RunningAgentSchema().nullable(),
    /** Calls the running nested agent waits on, with their agentPath from this level down. */
    pending: z.array(PendingApprovalSchema),
    /** The nested agent's last checkpoint moment: a new one is worth a checkpoint of this agent. */
    moment: z.string().nullable(),
  }),
);
export type Delegation = z.infer<ReturnType<typeof DelegationSchema>>;
export type RunningAgent = z.infer<ReturnType<typeof RunningAgentSchema>>;
