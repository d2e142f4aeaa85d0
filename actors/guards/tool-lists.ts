import { z } from "zod";
import { builtOnce } from "../../tools/built-once.js";
import type { Guard } from "../guard.js";
import { parseGuardOptions, ReasonSchema, ToolNamesSchema } from "./options.js";

export interface ToolListOptions {
  /** What the model reads when a call is denied, instead of the default. */
  reason?: string;
}

const ListSchema = builtOnce(() => z.object({ names: ToolNamesSchema(), reason: ReasonSchema().optional() }).strict());

/**
 * Allow-list: calls to any tool not named here are denied (unknown tools included), so adding a
 * tool to the agent later never widens what this guard lets through.
 */
export function allowTools(names: readonly string[], options: ToolListOptions = {}): Guard {
  const parsed = parseGuardOptions("allowTools", ListSchema(), { names, ...options });
  const allowed = new Set(parsed.names);
  const list = [...allowed].join(", ");
  return (call) =>
    allowed.has(call.name)
      ? { decision: "allow" }
      : {
          decision: "deny",
          reason: parsed.reason ?? `${call.name} is not one of the tools allowed here (${list}). Use one of those or answer without it.`,
        };
}

/** Deny-list: calls to the tools named here are denied; everything else is left to other guards. */
export function denyTools(names: readonly string[], options: ToolListOptions = {}): Guard {
  const parsed = parseGuardOptions("denyTools", ListSchema(), { names, ...options });
  const denied = new Set(parsed.names);
  return (call) =>
    denied.has(call.name)
      ? { decision: "deny", reason: parsed.reason ?? `${call.name} may not be used here. Use another tool or answer without it.` }
      : { decision: "allow" };
}
