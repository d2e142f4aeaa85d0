import { z } from "zod";
import type { CallDecision } from "../actors/guard.js";
import type { CompactionStrategy } from "../actors/compaction.js";
import { ModelCallCompletedSchema, ModelCallFailedSchema, ModelCallStartedSchema, TextDeltaSchema } from "../actors/model-events.js";
import { ToolCallCompletedSchema, ToolCallFailedSchema, ToolCallStartedSchema } from "../actors/tool-events.js";
import { UsageSchema } from "../actors/usage-schema.js";
import { AgentPathSchema } from "./commands.js";

/*
 * The agent's telemetry (observed with `actor.on(type, handler)`), as one table of zod schemas:
 * `AgentEmitted`, `AgentEmittedType`, `EmittedBase` and `EMITTED_TYPES` all come from
 * `AgentEmittedSchema` below. The events the model client and the tool executor report are their
 * schemas (actors/model-events.ts, actors/tool-events.ts) plus the base every emitted event carries,
 * which the machine adds; the rest are the machine's own. Every schema is strict, so a field an
 * event really carries must be declared here.
 *
 * Nothing parses events on the emit path (it runs on every streamed token): the schemas are the
 * types, the docs, and what the tests hold the events of real runs against.
 */

/** Why a failed run ended. The one list: types, schemas and checks derive from it. */
export const TERMINATION_REASONS = [
  "maxIterations",
  "tokenBudget",
  "modelError",
  "cancelled",
  "approvalTimeout",
  "toolProviderError",
  "internalError",
  "handoffFailed",
  "invalidOutput",
] as const;
export type TerminationReason = (typeof TERMINATION_REASONS)[number];

/** The fields every emitted event carries (the machine adds them). */
const BASE = {
  agent: z.string(),
  runId: z.string(),
  iteration: z.number().int().min(0),
  /** Epoch milliseconds. */
  timestamp: z.number(),
  /** Present on events re-emitted from a nested agent: where it sits (see AgentPathSchema). */
  agentPath: AgentPathSchema.optional(),
};

/** Carried by every emitted event. Never carries keys, headers or the prompt. */
export const EmittedBaseSchema = z.strictObject(BASE);
export type EmittedBase = z.infer<typeof EmittedBaseSchema>;

const CompactionSizeSchema = z.strictObject({ messages: z.number().int().min(0), tokens: z.number().int().min(0) });

// ---- The machine's own events (without the base) ----------------------------------------------

const ReplyStartedSchema = z.strictObject({
  type: z.literal("reply.started"),
  /** The reply's number in the run: 1 for the first. */
  round: z.number().int().min(1),
});

const ReplyCompletedSchema = z.strictObject({
  type: z.literal("reply.completed"),
  round: z.number().int().min(0),
  /** How many tool calls the reply asks for. */
  toolCalls: z.number().int().min(0),
  finishReason: z.string().nullable(),
  usage: UsageSchema,
  /** The model that answered (after fallbacks). */
  model: z.string(),
});

const ToolCallDeniedSchema = z.strictObject({
  type: z.literal("tool.call.denied"),
  callId: z.string(),
  name: z.string(),
  reason: z.string(),
  /** `denied` by a guard, or `rejected` by the approver (or the approval deadline). */
  decision: z.enum(["denied", "rejected"] as const satisfies readonly CallDecision["status"][]),
});

const ApprovalRequestedSchema = z.strictObject({
  type: z.literal("guard.approval.requested"),
  callId: z.string(),
  name: z.string(),
  arguments: z.string(),
  /** The guard's reason for asking. */
  reason: z.string().optional(),
  /** Epoch milliseconds after which the call is rejected (or the run fails), when the guard set a timeout. */
  deadline: z.number().optional(),
});

const ApprovalDecidedSchema = z.strictObject({
  type: z.literal("guard.approval.decided"),
  callId: z.string(),
  name: z.string(),
  decision: z.enum(["approved", "rejected"] as const satisfies readonly CallDecision["status"][]),
  /** True when the approver changed the arguments. */
  edited: z.boolean(),
  reason: z.string().optional(),
});

/** An approval or rejection that changed nothing (unknown call, malformed, already decided). */
const ApprovalRefusedSchema = z.strictObject({
  type: z.literal("guard.approval.refused"),
  /** The call id as sent, or a description of it when it is not a string (`(number)`). */
  callId: z.string(),
  reason: z.string(),
});

/** A command that does not fit its shape (e.g. `agent.cancel` with a `reason` that is not text): nothing changed. */
const CommandRefusedSchema = z.strictObject({
  type: z.literal("agent.command.refused"),
  command: z.string(),
  reason: z.string(),
});

const OutputPartialSchema = z.strictObject({
  type: z.literal("output.partial"),
  /** The structured output as far as it has streamed (parsed from incomplete JSON). */
  partial: z.unknown(),
});

const OutputInvalidSchema = z.strictObject({
  type: z.literal("output.invalid"),
  error: z.string(),
  /** Final outputs rejected so far in this run. */
  failures: z.number().int().min(0),
});

const ContextCompactedSchema = z.strictObject({
  type: z.literal("context.compacted"),
  strategy: z.enum(["trim", "summarize"] as const satisfies readonly CompactionStrategy[]),
  before: CompactionSizeSchema,
  after: CompactionSizeSchema,
  /** What summarizing cost (zero for trimming). */
  usage: UsageSchema,
});

const LoopTerminatedSchema = z.strictObject({
  type: z.literal("loop.terminated"),
  status: z.enum(["succeeded", "failed"]),
  /** Present when the run failed. */
  reason: z.enum(TERMINATION_REASONS).optional(),
  rounds: z.number().int().min(0),
  usage: UsageSchema,
});

const HandoffSchema = z.strictObject({
  type: z.literal("agent.handoff"),
  callId: z.string(),
  name: z.string(),
  /** This agent's machine name. */
  from: z.string(),
  /** The machine name of the agent taking over. */
  to: z.string(),
  /** How many messages of the conversation the target receives. */
  messages: z.number().int().min(0),
});

// ---- The table --------------------------------------------------------------------------------

/** Every event the agent emits, keyed by `type`: each event's payload plus the base. */
export const AgentEmittedSchema = z.discriminatedUnion("type", [
  ReplyStartedSchema.extend(BASE),
  ModelCallStartedSchema.extend(BASE),
  TextDeltaSchema.extend(BASE),
  ModelCallCompletedSchema.extend(BASE),
  ModelCallFailedSchema.extend(BASE),
  ReplyCompletedSchema.extend(BASE),
  ToolCallStartedSchema.extend(BASE),
  ToolCallCompletedSchema.extend(BASE),
  ToolCallFailedSchema.extend(BASE),
  ToolCallDeniedSchema.extend(BASE),
  ApprovalRequestedSchema.extend(BASE),
  ApprovalDecidedSchema.extend(BASE),
  ApprovalRefusedSchema.extend(BASE),
  CommandRefusedSchema.extend(BASE),
  OutputPartialSchema.extend(BASE),
  OutputInvalidSchema.extend(BASE),
  ContextCompactedSchema.extend(BASE),
  LoopTerminatedSchema.extend(BASE),
  HandoffSchema.extend(BASE),
]);

export type AgentEmitted = z.infer<typeof AgentEmittedSchema>;
export type AgentEmittedType = AgentEmitted["type"];

/** Every emitted event type, in the table's order. */
export const EMITTED_TYPES: readonly AgentEmittedType[] = Object.freeze(AgentEmittedSchema.options.map((option) => option.shape.type.value));
