import { z } from "zod";
import { PrintableIdSchema } from "../machines/contract/printable-id.js";
import { MessageSchema, PartsContentSchema } from "../actors/messages.js";
import { PendingApprovalSchema, type PendingApproval } from "../machines/contract/approvals.js";
import { AgentOutputSchema } from "../machines/contract/agent-output.js";
import { RunStatusSchema } from "../machines/contract/run-status.js";
import { UsageSchema } from "../actors/usage.js";

/**
 * The wire protocol between `agentHandler` (jianmu/http) and `useAgent` (jianmu/react): request
 * bodies, the server-sent events of a run, and error bodies. Both sides parse with these schemas
 * and every type is inferred from them. Browser-safe: zod only.
 */

// ---- Requests ---------------------------------------------------------------------------------

/** `POST /runs`: start a run of one of the handler's agents. */
export const StartRunSchema = z
  .object({
    agent: z.string().min(1, "must name one of the handler's agents"),
    /** The user's message, appended to the conversation as a user turn: text, or parts (text, images, files). */
    message: PartsContentSchema.refine((message) => message !== "", "must not be empty").optional(),
    /** Earlier turns (or several messages) to start from. */
    messages: z.array(MessageSchema).optional(),
    /** Host state to start from (e.g. the state of an earlier run). */
    state: z.record(z.string(), z.unknown()).optional(),
    /** Continue this thread: the run starts from the thread's conversation so far (kept in the handler's store). */
    threadId: PrintableIdSchema.optional(),
  })
  .strict()
  .refine((body) => body.message !== undefined || (body.messages?.length ?? 0) > 0, {
    message: "give the task as message (a string) or messages (a non-empty array)",
    path: ["message"],
  });
export type StartRun = z.infer<typeof StartRunSchema>;

/** `POST /runs/:id/events`: what a person can send to a run. */
export const RunCommandSchema = z.discriminatedUnion("type", [
  z
    .object({
      type: z.literal("guard.approve"),
      callId: z.string().min(1),
      /** Edited arguments (an object or JSON text); checked against the tool's schema. */
      args: z.union([z.record(z.string(), z.unknown()), z.string()]).optional(),
    })
    .strict(),
  z.object({ type: z.literal("guard.reject"), callId: z.string().min(1), reason: z.string().max(2_000).optional() }).strict(),
  z.object({ type: z.literal("agent.cancel"), reason: z.string().max(2_000).optional() }).strict(),
]);
export type RunCommand = z.infer<typeof RunCommandSchema>;

// ---- What a run looks like --------------------------------------------------------------------

/** Where a run stands: the status its checkpoints are saved with. */
export { RunStatusSchema, type RunStatus } from "../machines/contract/run-status.js";

/** The statechart's state: XState's value and its dotted path. */
export const ChartPositionSchema = z.object({
  value: z.union([z.string(), z.record(z.string(), z.unknown())]),
  path: z.string(),
});
export type ChartPosition = z.infer<typeof ChartPositionSchema>;

// One shape for a call waiting for a person, wherever it is shown (nested agents' calls carry their agentPath).
export { PendingApprovalSchema };
export type PendingApprovalView = PendingApproval;

/** The end of a run, without the conversation (that arrived as `message` events). */
export const RunOutputSchema = AgentOutputSchema.pick({ status: true, finalAnswer: true, rounds: true, iterations: true, usage: true, toolEffects: true, termination: true });
export type RunOutputView = z.infer<typeof RunOutputSchema>;

/** `GET /runs/:id`, and the first event of a stream that cannot be replayed from where it stopped. */
export const RunSnapshotSchema = z.object({
  runId: z.string(),
  agent: z.string(),
  status: RunStatusSchema,
  state: ChartPositionSchema,
  messages: z.array(MessageSchema),
  streamingText: z.string(),
  pendingApprovals: z.array(PendingApprovalSchema),
  usage: UsageSchema,
  output: RunOutputSchema.nullable(),
});
export type RunSnapshot = z.infer<typeof RunSnapshotSchema>;

/** One run of a thread, in `GET /threads/:threadId`. */
export const ThreadRunViewSchema = z.object({
  runId: z.string(),
  /** The handler's name for the run's agent (absent for a run of an agent this handler does not serve). */
  agent: z.string().optional(),
  /** Where the run stands in the store (`queued`: submitted to a run queue, not yet claimed by a worker). */
  status: z.union([RunStatusSchema, z.literal("queued")]),
});
export type ThreadRunView = z.infer<typeof ThreadRunViewSchema>;

/** `GET /threads/:threadId`: the thread's conversation and its runs. */
export const ThreadViewSchema = z.object({
  threadId: z.string(),
  /** The conversation as the thread's latest ended run left it ([] while its first run has not ended); the next run starts from it. */
  messages: z.array(MessageSchema),
  /** The thread's runs, oldest first (the latest may still be running; follow it with `GET /runs/:id/stream`). */
  runs: z.array(ThreadRunViewSchema),
});
export type ThreadView = z.infer<typeof ThreadViewSchema>;

// ---- The server-sent events of a run ------------------------------------------------------------

/** Each event's `data`, by its `event:` name. */
export const RUN_EVENT_SCHEMAS = {
  "run.started": z.object({ runId: z.string(), agent: z.string() }),
  "run.snapshot": RunSnapshotSchema,
  "state.changed": ChartPositionSchema.extend({ status: RunStatusSchema }),
  "reply.started": z.object({ round: z.number().int() }),
  "text.delta": z.object({ delta: z.string() }),
  "reasoning.delta": z.object({ delta: z.string() }),
  message: z.object({ index: z.number().int().min(0), message: MessageSchema }),
  "tool.call.started": z.object({ callId: z.string(), name: z.string(), arguments: z.string() }),
  "tool.call.completed": z.object({ callId: z.string(), name: z.string(), output: z.string(), durationMs: z.number() }),
  "tool.call.failed": z.object({ callId: z.string(), name: z.string(), error: z.string(), errorKind: z.string() }),
  "tool.call.denied": z.object({ callId: z.string(), name: z.string(), reason: z.string() }),
  "approval.requested": PendingApprovalSchema,
  "approval.decided": z.object({ callId: z.string(), name: z.string(), decision: z.enum(["approved", "rejected"]), edited: z.boolean(), reason: z.string().optional() }),
  /** A decision the run did not apply (an edit the tool refuses, a call not waiting): the call, if it was waiting, still waits. */
  "approval.refused": z.object({ callId: z.string(), reason: z.string() }),
  usage: z.object({ usage: UsageSchema }),
  "run.finished": z.object({ output: RunOutputSchema }),
  "run.error": z.object({ message: z.string() }),
} as const;

export type RunEventType = keyof typeof RUN_EVENT_SCHEMAS;
export type RunEventData<T extends RunEventType> = z.infer<(typeof RUN_EVENT_SCHEMAS)[T]>;
/** One event of a run as both sides handle it: `{ type, data }`. */
export type RunEvent = { [T in RunEventType]: { type: T; data: RunEventData<T> } }[RunEventType];
/** A run event with its SSE id (`<stream epoch>.<sequence>`), for Last-Event-ID. */
export type IdentifiedRunEvent = RunEvent & { id: string };

export const RUN_EVENT_TYPES = Object.keys(RUN_EVENT_SCHEMAS) as RunEventType[];

export function isRunEventType(type: string): type is RunEventType {
  return Object.hasOwn(RUN_EVENT_SCHEMAS, type);
}

/** Check one received event; undefined for an event type this version does not know (skip it). */
export function parseRunEvent(type: string, data: unknown): RunEvent | undefined {
  if (!isRunEventType(type)) return undefined;
  const parsed = RUN_EVENT_SCHEMAS[type].safeParse(data);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new Error(`event ${type}: data.${issue.path.map(String).join(".") || "(root)"} ${issue.message}`);
  }
  return { type, data: parsed.data } as RunEvent;
}

// ---- Errors ---------------------------------------------------------------------------------------

export const ERROR_CODES = [
  "not_found",
  "forbidden",
  "rate_limited",
  "method_not_allowed",
  "unknown_agent",
  "unknown_run",
  "unknown_thread",
  "run_expired",
  "malformed_json",
  "invalid_body",
  "body_too_large",
  "body_timeout",
  "unsupported_media_type",
  "run_finished",
  "run_active",
  "thread_busy",
  "not_pending",
  "command_refused",
  "store_failed",
  "internal_error",
] as const;
export const ErrorBodySchema = z.object({
  error: z.object({
    code: z.enum(ERROR_CODES),
    message: z.string(),
    field: z.string().optional(),
    /** On a 500: the id the server logged the failure under (its text stays in the log). */
    errorId: z.string().optional(),
  }),
});
export type ErrorBody = z.infer<typeof ErrorBodySchema>;
export type ErrorCode = (typeof ERROR_CODES)[number];

/** `POST /runs/:id/events` answers 202 with this. */
export const CommandAcceptedSchema = z.object({ runId: z.string(), status: RunStatusSchema, state: ChartPositionSchema });
export type CommandAccepted = z.infer<typeof CommandAcceptedSchema>;
