import { z } from "zod";
import type { EventOf, EventTable } from "./event-table.js";
import { TOOL_ERROR_KINDS } from "./tool-outcome.js";

/**
 * What the tool executor reports while a batch runs: each event's payload schema, keyed by its
 * `type` (see event-table.ts). `ToolProgress` is inferred from them, and the agent's emitted
 * `tool.call.*` telemetry (machines/contract/emitted.ts) is this table plus the fields the machine adds
 * (agent, runId, iteration, timestamp). Strict: every field really sent is declared.
 */
export const TOOL_PROGRESS_EVENTS = {
  "tool.call.started": () =>
    z.strictObject({
      callId: z.string(),
      name: z.string(),
      /** The arguments the call runs with, as JSON text (an approver's edit when there was one). */
      arguments: z.string(),
    }),
  /** A call of a tool with `retries` threw or timed out, and runs again after `delayMs` (its last failure is a `tool.call.failed`). */
  "tool.call.retrying": () =>
    z.strictObject({
      callId: z.string(),
      name: z.string(),
      /** The attempt that failed: 1 for the first run of the call. */
      attempt: z.number().int().min(1),
      /** How many attempts the call may take in all (the tool's `retries` + 1). */
      attempts: z.number().int().min(2),
      /** How long it waits before the next attempt. */
      delayMs: z.number().min(0),
      /** What went wrong, as `tool.call.failed` would say it. */
      error: z.string(),
      errorKind: z.enum(TOOL_ERROR_KINDS).extract(["threw", "timeout"]),
    }),
  "tool.call.completed": () =>
    z.strictObject({
      callId: z.string(),
      name: z.string(),
      durationMs: z.number().min(0),
      /** The observation the model reads (truncated to `maxToolOutputChars`). */
      output: z.string(),
    }),
  "tool.call.failed": () =>
    z.strictObject({
      callId: z.string(),
      name: z.string(),
      durationMs: z.number().min(0),
      /** What went wrong, as the model reads it (without the `Error: ` prefix). */
      error: z.string(),
      errorKind: z.enum(TOOL_ERROR_KINDS),
    }),
} satisfies EventTable;

/** Live progress, sent to the agent while the batch runs (in batches, see `ProgressBatcher`). */
export type ToolProgress = EventOf<typeof TOOL_PROGRESS_EVENTS>;
