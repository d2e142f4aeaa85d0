import { createHash } from "node:crypto";
import { z } from "zod";
import { MessageSchema } from "../actors/messages.js";
import { ThreadIdSchema } from "../machines/contract/context.js";
import { PrintableIdSchema } from "../machines/contract/printable-id.js";
import { PendingApprovalSchema } from "../machines/contract/approvals.js";
import type { PersistedAgent } from "../machines/persistence/persistence.js";

/**
 * The run queue's records at its boundaries (what callers pass in, what stores hand back). Every type
 * of the queue is derived from these schemas.
 */

/** Where a queued run stands. `queued`: submitted, never claimed; `running`: claimed at least once and
 *  not finished (it may be between owners after a crash); `awaitingApproval`: parked on a person. */
export const QUEUE_STATUSES = ["queued", "running", "awaitingApproval", "succeeded", "failed"] as const;
export const QueueStatusSchema = z.enum(QUEUE_STATUSES);
export type QueueStatus = z.infer<typeof QueueStatusSchema>;
export const FINAL_STATUSES: readonly QueueStatus[] = ["succeeded", "failed"];

/** A run id: also used in SQL parameters, file names and URLs, so kept printable. */
export const RunIdSchema = PrintableIdSchema;

export { ThreadIdSchema };

/** An agent's name as workers know it (the key in `startWorker({ agents })`). */
export const AgentNameSchema = z
  .string()
  .min(1, "must name an agent, e.g. \"support\"")
  .max(100, "must be at most 100 characters")
  .regex(/^[\w.-]+$/, "may only hold letters, digits and . _ -");

/**
 * What `submit` does with an agent no worker has registered yet (a store option). `queue` (the
 * default): the run waits for a worker that starts later (a web tier may start before its workers).
 * `refuse`: `RunQueueError("unknown_agent")`, which catches a misspelt name at once.
 */
export const UnknownAgentsSchema = z.enum(["queue", "refuse"]).default("queue");
export type UnknownAgents = z.output<typeof UnknownAgentsSchema>;

export const RunInputSchema = z
  .object({
    messages: z.array(MessageSchema).optional(),
    state: z.record(z.string(), z.unknown()).optional(),
    /** Continue this thread: the run starts from the thread's conversation so far (see loadThread). */
    threadId: ThreadIdSchema.optional(),
  })
  .strict();
export type RunInput = z.infer<typeof RunInputSchema>;

export const SubmitSchema = z
  .object({
    agent: AgentNameSchema,
    input: RunInputSchema.default({}),
    /** The same id twice is one run (the second submit returns it and changes nothing). */
    runId: RunIdSchema.optional(),
  })
  .strict();
export type SubmitRequest = z.input<typeof SubmitSchema>;

/** The events a caller may send to a stored run from any process. */
export const RunCommandSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("guard.approve"), callId: z.string().min(1), args: z.union([z.record(z.string(), z.unknown()), z.string()]).optional() }).strict(),
  z.object({ type: z.literal("guard.reject"), callId: z.string().min(1), reason: z.string().optional() }).strict(),
  z.object({ type: z.literal("agent.cancel"), reason: z.string().optional() }).strict(),
]);
export type RunCommand = z.infer<typeof RunCommandSchema>;

/**
 * A repeated send is recorded once: one cancel per run, and each decision for a call once. A
 * different decision for a call still pending is recorded too (an edit the tool refused, then its
 * correction): the run applies the first one that fits and refuses the others, as in process.
 */
export function dedupeKeyOf(command: RunCommand): string {
  if (command.type === "agent.cancel") return "agent.cancel";
  return `call:${command.callId}:${createHash("sha256").update(JSON.stringify(command)).digest("hex").slice(0, 32)}`;
}

export const RunStatusInfoSchema = z.object({
  runId: z.string(),
  agent: z.string(),
  status: QueueStatusSchema,
  pendingApprovals: z.array(PendingApprovalSchema),
  /** The worker holding the run's lease right now (absent when no one does). */
  owner: z.string().optional(),
  /** Epoch milliseconds of the last change. */
  updatedAt: z.number(),
});
export type RunStatusInfo = z.infer<typeof RunStatusInfoSchema>;

export const RunSummarySchema = RunStatusInfoSchema.extend({
  /** Dotted state path of the last checkpoint (absent before the first). */
  state: z.string().optional(),
  iteration: z.number().int(),
  createdAt: z.number(),
});
export type RunSummary = z.infer<typeof RunSummarySchema>;

export const ListOptionsSchema = z
  .object({
    status: QueueStatusSchema.optional(),
    agent: AgentNameSchema.optional(),
    limit: z.number().int().min(1).max(10_000).default(100),
  })
  .strict();
export type ListOptions = z.input<typeof ListOptionsSchema>;

/** What a worker gets when it claims a run: the fencing token its writes must carry. */
export interface ClaimedRun {
  runId: string;
  agent: string;
  token: number;
  input: RunInput;
  /** The last checkpoint, when the run has one. */
  checkpoint?: PersistedAgent;
  /**
   * True when the claim saw nothing waiting in the run's inbox: the worker skips its first inbox
   * read (an event sent after the claim comes with its own notification). Absent: read it.
   */
  inboxEmpty?: boolean;
}

/** A command waiting in a run's inbox. */
export interface InboxEvent {
  id: number;
  command: RunCommand;
}

export { pendingFromSnapshot } from "../machines/contract/approvals.js";

/** `field: problem` of a zod error's first issue. */
export function firstIssue(error: z.ZodError, prefix: string): string {
  const issue = error.issues[0]!;
  const path = issue.path.map(String).join(".");
  return `${prefix}${path ? `.${path}` : ""} ${issue.message}`;
}
