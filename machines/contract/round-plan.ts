import { z } from "zod";
import { ToolChoiceSchema } from "./config.js";

/**
 * A round's plan, as `prepareRound` (machines/chart/prepare-round.ts) gives it and `loop.round` keeps it:
 * checkpointed with the run, so a restored run makes the same call.
 */

/** Plain JSON: what a request body can carry (no Date, Map, function, NaN...). */
function isJsonValue(value: unknown): boolean {
  if (value === null || typeof value === "string" || typeof value === "boolean") return true;
  if (typeof value === "number") return Number.isFinite(value);
  if (Array.isArray(value)) return value.every(isJsonValue);
  if (typeof value !== "object") return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return (proto === Object.prototype || proto === null) && Object.values(value).every(isJsonValue);
}

// Not `z.json()`: its type (`z.JSONType`) would reach our published .d.ts, and zod 4.1, the lowest
// version the peer range allows, does not export it.
const JsonValueSchema = z.custom<unknown>(isJsonValue);

/** What `prepareRound` may change for one model call. Every field optional; JSON only. */
export const RoundPlanSchema = z
  .object({
    /** The model of this call (replaces `config.model`). */
    model: z.string().min(1).optional(),
    /** The tools offered this round, by name: a subset of the agent's tools. */
    tools: z.array(z.string().min(1)).optional(),
    /** `tool_choice` of this call (any round, unlike `config.toolChoice`). */
    toolChoice: ToolChoiceSchema.optional(),
    /** Merged over `config.extraParams` for this call. */
    extraParams: z.record(z.string(), JsonValueSchema).optional(),
    /** Replaces `config.systemPrompt` for this call (a custom context builder receives it too). */
    systemPrompt: z.string().optional(),
  })
  .strict();
export type RoundPlan = z.infer<typeof RoundPlanSchema>;
