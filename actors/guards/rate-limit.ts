import { z } from "zod";
import { builtOnce } from "../../tools/built-once.js";
import type { Guard, GuardCall, GuardContext, GuardDecision } from "../guard.js";
import { earlierAdmitted, historyBefore } from "./batch-order.js";
import { GuardOptionsError, parseGuardOptions, times, ToolNameSchema, ToolNamesSchema } from "./options.js";

export interface RateLimitOptions {
  /** The tool to limit (or use `tools`). */
  tool?: string;
  /** Several tools; each gets its own limit unless `shared` is true. */
  tools?: readonly string[];
  /** Calls allowed within any window of `windowMs`. */
  maxCalls: number;
  windowMs: number;
  /** Count the listed tools together against one limit (e.g. one API quota behind several tools). */
  shared?: boolean;
}

const RateLimitSchema = builtOnce(() =>
  z
    .object({
      tool: ToolNameSchema().optional(),
      tools: ToolNamesSchema().optional(),
      maxCalls: z.number().int("must be a whole number").positive("must be at least 1 (use denyTools to forbid a tool)"),
      windowMs: z.number().positive("must be a positive number of milliseconds"),
      shared: z.boolean().optional(),
    })
    .strict(),
);

/** "400 ms", "1.5 s", "2 min": for reasons the model reads. */
export function formatDuration(ms: number): string {
  const round = (value: number) => Number(value.toFixed(1));
  if (Math.ceil(ms) < 1000) return `${Math.ceil(ms)} ms`;
  if (ms < 60_000) return `${round(ms / 1000)} s`;
  if (ms < 3_600_000) return `${round(ms / 60_000)} min`;
  return `${round(ms / 3_600_000)} h`;
}

/**
 * At most `maxCalls` calls within any sliding window of `windowMs`, per run. A call counts from
 * the time it started (`ctx.history[].at`) until `windowMs` later; calls earlier in the same
 * batch count as starting now. Over the limit is a deny that tells the model when to try again.
 * The check happens in Preflight: a call that then waits for approval is not checked again.
 */
export function rateLimit(options: RateLimitOptions): Guard {
  const parsed = parseGuardOptions("rateLimit", RateLimitSchema(), options);
  if ((parsed.tool === undefined) === (parsed.tools === undefined)) {
    throw new GuardOptionsError("rateLimit", "options", "must set exactly one of tool (one name) or tools (a list of names)");
  }
  const limited = new Set(parsed.tools ?? [parsed.tool!]);
  const { maxCalls, windowMs } = parsed;
  const shared = parsed.shared === true && limited.size > 1;
  const window = formatDuration(windowMs);

  const verdict = (call: GuardCall, ctx: GuardContext, before: readonly GuardCall[]): GuardDecision => {
    if (!limited.has(call.name)) return { decision: "allow" };
    const counts = (name: string) => (shared ? limited.has(name) : name === call.name);
    // Start times of the calls still inside the window, oldest first; batch siblings start now.
    const starts = [
      ...historyBefore(call, ctx)
        .filter((r) => counts(r.name) && ctx.now - r.at < windowMs)
        .map((r) => r.at)
        .sort((a, b) => a - b),
      ...before.filter((c) => counts(c.name)).map(() => ctx.now),
    ];
    if (starts.length < maxCalls) return { decision: "allow" };
    // A slot frees up when enough of the oldest calls have left the window.
    const freedAt = starts[starts.length - maxCalls]! + windowMs;
    const who = shared ? `${[...limited].join(", ")} together` : call.name;
    return {
      decision: "deny",
      reason:
        `${who} may be called at most ${times(maxCalls)} per ${window}; ${shared ? "they were" : "it was"} already called ` +
        `${times(starts.length)} in the last ${window}. It can be called again in ${formatDuration(Math.max(0, freedAt - ctx.now))}; ` +
        `meanwhile use other tools or answer with what you have.`,
    };
  };

  return (call, ctx) => {
    const before = earlierAdmitted(call, ctx, (candidate, admitted) => verdict(candidate, ctx, admitted).decision === "allow");
    return verdict(call, ctx, before);
  };
}
