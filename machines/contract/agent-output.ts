import { z } from "zod";
import { MessageSchema } from "../../actors/messages.js";
import { UsageSchema } from "../../actors/usage.js";
import { PendingApprovalSchema } from "./approvals.js";
import { TerminationSchema } from "./termination.js";

// Its own small file: the web protocol (browser code) checks run outputs with it.

/**
 * What a run ends with: `runAgent`'s result, the machine's output, and what the run queue stores and hands back.
 * The machine itself ends only "succeeded" or "failed"; "awaitingApproval" is what `runAgent` (given no
 * `onApproval`) resolves with when the run has nothing left to do but wait for a person.
 */
export const AgentOutputSchema = z.object({
  status: z.enum(["succeeded", "failed", "awaitingApproval"]),
  finalAnswer: z.string().nullable(),
  /** With `output`: the validated final output (present when the run succeeded). */
  output: z.unknown().optional(),
  messages: z.array(MessageSchema),
  rounds: z.number().int().min(0),
  usage: UsageSchema,
  toolEffects: z.array(z.string()),
  iterations: z.number().int().min(0),
  runId: z.string().min(1),
  /** The whole host state, ready to be passed to the next run. */
  state: z.record(z.string(), z.unknown()),
  /** Why a failed run ended (absent when it succeeded). */
  termination: TerminationSchema.optional(),
  /**
   * With status "awaitingApproval": the calls waiting for a decision (what `pendingApprovals()` returns).
   * Continue the run from its checkpoint: `runAgent(machine, undefined, { snapshot, onApproval })`.
   */
  pendingApprovals: z.array(PendingApprovalSchema).optional(),
});

/** `T` is the type of the structured output: `z.infer<typeof schema>` of `createReactMachine({ output: schema })`. */
export type AgentOutput<T = unknown> = Omit<z.infer<typeof AgentOutputSchema>, "output"> & { output?: T };
