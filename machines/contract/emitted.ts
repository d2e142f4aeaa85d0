import { z } from "zod";
import type { CallDecision } from "../../actors/guard.js";
import type { CompactionStrategy } from "../../actors/compaction.js";
import type { GuardrailStage } from "../../actors/guardrail.js";
import { eventTypes, tableSchema, type EventOf, type EventTable } from "../../actors/event-table.js";
import { MODEL_CALL_EVENTS } from "../../actors/model-events.js";
import { TOOL_PROGRESS_EVENTS } from "../../actors/tool-events.js";
import { UsageSchema } from "../../actors/usage.js";
import { AgentPathSchema } from "./commands.js";
import { TERMINATION_REASONS } from "./termination-reasons.js";

/*
 * The agent's telemetry (observed with `actor.on(type, handler)`), as one table: each emitted
 * event's `type` maps to the zod schema of its payload (actors/event-table.ts). `AgentEmitted`,
 * `AgentEmittedType` and `EMITTED_TYPES` come from it, `EmittedBase` from the base schema. The
 * events the model client and the tool executor report are their own tables (actors/model-events.ts,
 * actors/tool-events.ts), spread in here: what the machine emits for them is what they report plus
 * the base. Every schema is strict, so a field an event really carries must be declared.
 *
 * Nothing parses events on the emit path (it runs on every streamed token), and no schema is built
 * on import: the schemas are the types, the docs, and what the tests hold the events of real runs
 * against (`agentEmittedSchema()`).
 */

/** The fields every emitted event carries (the machine adds them). Never keys, headers or the prompt. */
const emittedBaseSchema = () =>
  z.strictObject({
    agent: z.string(),
    runId: z.string(),
    iteration: z.number().int().min(0),
    /** Epoch milliseconds. */
    timestamp: z.number(),
    /** Present on events re-emitted from a nested agent: where it sits (see AgentPathSchema). */
    agentPath: AgentPathSchema.optional(),
  });

/** Carried by every emitted event. Never carries keys, headers or the prompt. */
export type EmittedBase = z.infer<ReturnType<typeof emittedBaseSchema>>;

const compactionSize = () => z.strictObject({ messages: z.number().int().min(0), tokens: z.number().int().min(0) });

/** Every event the agent emits, in order: its `type`, and the schema of its payload (without the base). */
export const EMITTED_EVENTS = {
  "reply.started": () =>
    z.strictObject({
      /** The reply's number in the run: 1 for the first. */
      round: z.number().int().min(1),
    }),
  ...MODEL_CALL_EVENTS,
  "reply.completed": () =>
    z.strictObject({
      round: z.number().int().min(0),
      /** How many tool calls the reply asks for. */
      toolCalls: z.number().int().min(0),
      finishReason: z.string().nullable(),
      usage: UsageSchema,
      /** The model that answered (after fallbacks). */
      model: z.string(),
    }),
  ...TOOL_PROGRESS_EVENTS,
  "tool.call.denied": () =>
    z.strictObject({
      callId: z.string(),
      name: z.string(),
      reason: z.string(),
      /** `denied` by a guard, or `rejected` by the approver (or the approval deadline). */
      decision: z.enum(["denied", "rejected"] as const satisfies readonly CallDecision["status"][]),
    }),
  "guard.approval.requested": () =>
    z.strictObject({
      callId: z.string(),
      name: z.string(),
      arguments: z.string(),
      /** The guard's reason for asking. */
      reason: z.string().optional(),
      /** Epoch milliseconds after which the call is rejected (or the run fails), when the guard set a timeout. */
      deadline: z.number().optional(),
    }),
  "guard.approval.decided": () =>
    z.strictObject({
      callId: z.string(),
      name: z.string(),
      decision: z.enum(["approved", "rejected"] as const satisfies readonly CallDecision["status"][]),
      /** True when the approver changed the arguments. */
      edited: z.boolean(),
      reason: z.string().optional(),
    }),
  /** An approval or rejection that changed nothing (unknown call, malformed, already decided). */
  "guard.approval.refused": () =>
    z.strictObject({
      /** The call id as sent, or a description of it when it is not a string (`(number)`). */
      callId: z.string(),
      reason: z.string(),
    }),
  /** A command that does not fit its shape (e.g. `agent.cancel` with a `reason` that is not text): nothing changed. */
  "agent.command.refused": () => z.strictObject({ command: z.string(), reason: z.string() }),
  "output.partial": () =>
    z.strictObject({
      /** The structured output as far as it has streamed (parsed from incomplete JSON). */
      partial: z.unknown(),
    }),
  "output.invalid": () =>
    z.strictObject({
      error: z.string(),
      /** Final outputs rejected so far in this run. */
      failures: z.number().int().min(0),
    }),
  "context.compacted": () =>
    z.strictObject({
      strategy: z.enum(["trim", "summarize"] as const satisfies readonly CompactionStrategy[]),
      before: compactionSize(),
      after: compactionSize(),
      /** What summarizing cost (zero for trimming). */
      usage: UsageSchema,
    }),
  "loop.terminated": () =>
    z.strictObject({
      status: z.enum(["succeeded", "failed"]),
      /** Present when the run failed. */
      reason: z.enum(TERMINATION_REASONS).optional(),
      rounds: z.number().int().min(0),
      usage: UsageSchema,
      /**
       * With budgets: what the run counted against them beyond `usage` (attempts that may have been
       * billed without reporting usage, its nested agents' alike); the agent that started it counts it too.
       */
      unreported: z.strictObject({ tokens: z.number().int().min(0), cost: z.number().min(0) }).optional(),
    }),
  "agent.handoff": () =>
    z.strictObject({
      callId: z.string(),
      name: z.string(),
      /** This agent's machine name. */
      from: z.string(),
      /** The machine name of the agent taking over. */
      to: z.string(),
      /** How many messages of the conversation the target receives. */
      messages: z.number().int().min(0),
    }),
  /** A guardrail tripped: the run fails (guardrailTripped). */
  "guardrail.tripped": () =>
    z.strictObject({
      /** Where it looked: the run's input, or its final answer. */
      stage: z.enum(["input", "output"] as const satisfies readonly GuardrailStage[]),
      guardrail: z.string(),
      reason: z.string(),
    }),
  /** A guardrail sent feedback: the model reads it and answers again (an iteration). */
  "guardrail.retried": () =>
    z.strictObject({
      stage: z.enum(["input", "output"] as const satisfies readonly GuardrailStage[]),
      guardrail: z.string(),
      feedback: z.string(),
    }),
} satisfies EventTable;

/** What the agent emits: one event of the table, with the base. */
export type AgentEmitted = EventOf<typeof EMITTED_EVENTS, EmittedBase>;
export type AgentEmittedType = AgentEmitted["type"];

/** Every emitted event type, in the table's order. */
export const EMITTED_TYPES: readonly AgentEmittedType[] = eventTypes(EMITTED_EVENTS);

let schema: z.ZodType<AgentEmitted> | undefined;
/** The whole table as one zod schema (a discriminated union on `type`), built on first use. */
export function agentEmittedSchema(): z.ZodType<AgentEmitted> {
  return (schema ??= tableSchema(EMITTED_EVENTS, emittedBaseSchema()));
}
