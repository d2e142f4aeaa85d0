import { z } from "zod";
import { builtOnce } from "../../tools/built-once.js";
import type { Guard, GuardDecision } from "../guard.js";
import { GuardOptionsError, parseGuardOptions, ReasonSchema, ToolNamesSchema } from "./options.js";

export interface RequireApprovalOptions {
  /** Calls to these tools wait for approval. */
  tools?: readonly string[];
  /** Calls to tools carrying any of these effect tags (e.g. "destructive", "network") wait for approval. */
  effectTags?: readonly string[];
  /** Shown to the approver in `guard.approval.requested`, instead of the default. */
  reason?: string;
  /** Approval must arrive within this many milliseconds of the check... */
  timeoutMs?: number;
  /** ...or the call is rejected ("reject", the default) or the run fails with reason "approvalTimeout" ("fail"). */
  onTimeout?: "reject" | "fail";
}

const ApprovalSchema = builtOnce(() =>
  z
    .object({
      tools: ToolNamesSchema().optional(),
      effectTags: z.array(z.string().min(1, "an effect tag must be a non-empty string")).min(1, "list at least one effect tag").optional(),
      reason: ReasonSchema().optional(),
      timeoutMs: z.number().positive("must be a positive number of milliseconds").optional(),
      onTimeout: z.enum(["reject", "fail"]).optional(),
    })
    .strict(),
);

/**
 * Calls to the named tools, or to tools tagged with any of the effect tags, become pending: the
 * run waits in AwaitingApproval until `guard.approve` or `guard.reject` names the call.
 * Tags come from the tool's own metadata, so an unknown tool matches by name only.
 */
export function requireApproval(options: RequireApprovalOptions): Guard {
  const parsed = parseGuardOptions("requireApproval", ApprovalSchema(), options);
  if (!parsed.tools && !parsed.effectTags) {
    throw new GuardOptionsError("requireApproval", "options", "must name tools, effectTags or both (e.g. { effectTags: [\"destructive\"] })");
  }
  if (parsed.onTimeout !== undefined && parsed.timeoutMs === undefined) {
    throw new GuardOptionsError("requireApproval", "options.onTimeout", "needs options.timeoutMs: without a deadline a call never times out");
  }
  const tools = new Set(parsed.tools ?? []);
  const tags = new Set(parsed.effectTags ?? []);
  const timing = parsed.timeoutMs !== undefined ? { timeoutMs: parsed.timeoutMs, onTimeout: parsed.onTimeout ?? "reject" } : {};

  return (call): GuardDecision => {
    const matchedTags = (call.tool?.effectTags ?? []).filter((tag) => tags.has(tag));
    if (!tools.has(call.name) && matchedTags.length === 0) return { decision: "allow" };
    const why = matchedTags.length > 0 ? ` (it is tagged ${matchedTags.join(", ")})` : "";
    return { decision: "pending", reason: parsed.reason ?? `${call.name} needs approval before it runs${why}`, ...timing };
  };
}
