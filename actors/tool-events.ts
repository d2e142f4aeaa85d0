import { z } from "zod";
import { TOOL_ERROR_KINDS } from "./tool-executor.js";

/*
 * What the tool executor reports while a batch runs, as zod schemas: the `ToolProgress` type is
 * inferred from them, and the agent's emitted `tool.call.*` telemetry (machines/emitted.ts) is each
 * of them plus the fields the machine adds (agent, runId, iteration, timestamp). Strict: every field
 * really sent is declared. Nothing parses these on the hot path.
 */

export const ToolCallStartedSchema = z.strictObject({
  type: z.literal("tool.call.started"),
  callId: z.string(),
  name: z.string(),
  /** The arguments the call runs with, as JSON text (an approver's edit when there was one). */
  arguments: z.string(),
});

export const ToolCallCompletedSchema = z.strictObject({
  type: z.literal("tool.call.completed"),
  callId: z.string(),
  name: z.string(),
  durationMs: z.number().min(0),
  /** The observation the model reads (truncated to `maxToolOutputChars`). */
  output: z.string(),
});

export const ToolCallFailedSchema = z.strictObject({
  type: z.literal("tool.call.failed"),
  callId: z.string(),
  name: z.string(),
  durationMs: z.number().min(0),
  /** What went wrong, as the model reads it (without the `Error: ` prefix). */
  error: z.string(),
  errorKind: z.enum(TOOL_ERROR_KINDS),
});

/** Every event the tool executor reports, keyed by `type`. */
export const ToolProgressSchema = z.discriminatedUnion("type", [ToolCallStartedSchema, ToolCallCompletedSchema, ToolCallFailedSchema]);

/** Live progress, sent to the agent while the batch runs (in batches, see `ProgressBatcher`). */
export type ToolProgress = z.infer<typeof ToolProgressSchema>;
