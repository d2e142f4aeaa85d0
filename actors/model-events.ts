import { z } from "zod";
import type { EventOf, EventTable } from "./event-table.js";
import { MODEL_ERROR_KINDS } from "./model-client.js";
import { UsageSchema } from "./usage.js";

/**
 * What a model client reports while one logical call runs (`ModelCallOptions.onEvent`): each
 * event's payload schema, keyed by its `type` (see event-table.ts). `ModelCallEvent` is inferred
 * from them, and the agent's emitted telemetry (machines/contract/emitted.ts) is this table plus the fields
 * the machine adds (agent, runId, iteration, timestamp), so the two cannot drift apart. Strict: a
 * field a client really sends must be declared here.
 */
export const MODEL_CALL_EVENTS = {
  "model.call.started": () =>
    z.strictObject({
      /** 1 for the first attempt of the call; counts on across retries and fallbacks. */
      attempt: z.number().int().min(1),
      model: z.string(),
      /** The endpoint's base URL (never a key). */
      endpoint: z.string(),
    }),
  "text.delta": () =>
    z.strictObject({
      /** The next piece of the answer's text as it streams. */
      delta: z.string(),
    }),
  "reasoning.delta": () =>
    z.strictObject({
      /**
       * The next piece of the model's reasoning as it streams: a reasoning model's summary (Responses
       * API, with `reasoning.summary` set), or the reasoning text some servers send beside the answer.
       * Never part of the answer; the pieces of one call add up to its turn's `reasoning`.
       */
      delta: z.string(),
    }),
  "model.call.completed": () =>
    z.strictObject({
      attempt: z.number().int().min(1),
      model: z.string(),
      endpoint: z.string(),
      usage: UsageSchema,
      /** `stop`, `tool_calls`, `length`, ... or null when the server sent none. */
      finishReason: z.string().nullable(),
      durationMs: z.number().min(0),
    }),
  "model.call.failed": () =>
    z.strictObject({
      attempt: z.number().int().min(1),
      model: z.string(),
      endpoint: z.string(),
      /** The HTTP status, when the server answered. */
      status: z.number().int().optional(),
      /** Why the attempt failed (redacted: never a key). */
      message: z.string(),
      /** True when another attempt follows (a retry of this endpoint or the next fallback). */
      willRetry: z.boolean(),
      durationMs: z.number().min(0),
      /** What kind of failure it was (the built-in client always says; a custom client may not). */
      kind: z.enum(MODEL_ERROR_KINDS).optional(),
      /** The server's error code (`rate_limit_exceeded`, `tool_use_failed`, ...), when it sent one. */
      code: z.string().optional(),
      /** What happens next: the same endpoint again, the next fallback, or nothing (the call fails). */
      next: z.enum(["retry", "fallback", "none"]).optional(),
    }),
} satisfies EventTable;

/** Progress of one logical call, reported while it runs (attempts, retries, streamed text). */
export type ModelCallEvent = EventOf<typeof MODEL_CALL_EVENTS>;
