import { z } from "zod";
import { PendingApprovalSchema } from "./approvals.js";
import { ErrorInfoSchema, type ErrorInfo } from "../../actors/errors.js";
import { ToolInfoSchema } from "../../tools/tool.js";
import { builtOnce } from "../../tools/built-once.js";

/*
 * The payloads of the agent's own internal events that end up in context. They are sent by its
 * children, but `actor.send` accepts them from anyone: a forged one must not put into context what
 * the next checkpoint cannot restore. So each is parsed before it is used (they are rare events:
 * once per run, or once per failure). The schemas are built on first use, not on `import "jianmu"`.
 */

/**
 * An `ErrorInfo` as a `tools.failed` event may carry it: a missing name becomes "Error", unknown
 * fields are dropped. What comes out is an `ErrorInfo` (actors/errors.ts), as a snapshot keeps it.
 */
const ReportedErrorSchema = builtOnce(() => ErrorInfoSchema.extend({ name: z.string().default("Error") }));

/**
 * Lists already checked. Every run of a machine without providers gets the same frozen-in-practice
 * list (the registry's `staticInfo`, never mutated), so it is checked once, not on every run.
 */
const checkedLists = new WeakSet<object>();
const toolListSchema = builtOnce(() => z.array(ToolInfoSchema));

/** True when a `tools.ready` event's tools can be kept (plain JSON of the right shape). */
export function isToolList(tools: unknown): boolean {
  if (!Array.isArray(tools)) return false;
  if (checkedLists.has(tools)) return true;
  try {
    const ok = toolListSchema().safeParse(tools).success && JSON.stringify(tools) !== undefined;
    if (ok) checkedLists.add(tools);
    return ok;
  } catch {
    return false;
  }
}

/** A `tools.failed` event's error as it may be kept, or undefined when it does not fit. */
export function errorInfoOf(error: unknown): ErrorInfo | undefined {
  try {
    const parsed = ReportedErrorSchema().safeParse(error);
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** A started call as `tool.progress` reports it, checked before it joins `loop.history`. */
export function isStartedCall(item: { callId?: unknown; name?: unknown }, at: unknown): boolean {
  return typeof item.callId === "string" && typeof item.name === "string" && typeof at === "number" && Number.isFinite(at);
}

/** What a nested agent reports of itself (`agent.status`): it goes into `loop.delegation` and so into every later checkpoint. */
const NestedStatusSchema = builtOnce(() => z.object({ pending: z.array(PendingApprovalSchema), moment: z.string().nullable() }));

export function isNestedStatus(event: { pending?: unknown; moment?: unknown }): boolean {
  try {
    return NestedStatusSchema().safeParse(event).success;
  } catch {
    return false;
  }
}
