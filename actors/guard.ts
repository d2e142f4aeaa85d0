import { fromPromise } from "xstate";
import type { DeepReadonly, ToolInfo } from "../tools/tool.js";
import type { ToolCall } from "./messages.js";
import type { CallDecision, CallRecord } from "./call-decision.js";

// Persisted shapes (in context, so in snapshots): schemas and types in one place.
export { CallDecisionSchema, CallRecordSchema, type CallDecision, type CallRecord } from "./call-decision.js";

/** A guard's verdict on one tool call. */
export type GuardDecision =
  | { decision: "allow" }
  | { decision: "deny"; reason: string }
  | {
      decision: "pending";
      reason?: string;
      /** Approval must arrive within this many milliseconds... */
      timeoutMs?: number;
      /** ...or the call is rejected (default) or the whole run fails with reason "approvalTimeout". */
      onTimeout?: "reject" | "fail";
    };

/** The call as a guard sees it. */
export interface GuardCall {
  readonly id: string;
  readonly name: string;
  /** The raw JSON text the model sent. */
  readonly arguments: string;
  /** The parsed arguments, or undefined when they are not a JSON object. */
  readonly args: Readonly<Record<string, unknown>> | undefined;
  /** The tool's description, or undefined for a tool that does not exist. */
  readonly tool: ToolInfo | undefined;
}

export interface GuardContext {
  readonly state: DeepReadonly<Record<string, unknown>>;
  readonly runId: string;
  readonly iteration: number;
  /** Calls executed earlier in this run, oldest first. */
  readonly history: readonly CallRecord[];
  /** Every call of the current batch (a guard may look at its siblings). */
  readonly batch: readonly GuardCall[];
  readonly now: number;
  readonly signal: AbortSignal;
}

export type Guard = (call: GuardCall, ctx: GuardContext) => GuardDecision | Promise<GuardDecision>;

export interface PreflightInput {
  calls: ToolCall[];
  tools: ToolInfo[];
  state: Record<string, unknown>;
  runId: string;
  iteration: number;
  history: CallRecord[];
}

export interface PreflightOutput {
  decisions: CallDecision[];
}

export function parseArgs(raw: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(raw === "" ? "{}" : raw);
    return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Combine guard verdicts for one call: any deny wins, then any pending, else allow.
 * A guard that throws denies (fail closed): a broken policy must not let calls through.
 */
export async function decide(guards: readonly Guard[], call: GuardCall, ctx: GuardContext): Promise<GuardDecision> {
  const verdicts = await Promise.all(
    guards.map(async (guard): Promise<GuardDecision> => {
      try {
        const verdict = await guard(call, ctx);
        if (!verdict || !["allow", "deny", "pending"].includes(verdict.decision)) {
          return { decision: "deny", reason: `a guard returned ${JSON.stringify(verdict)}, which is not a decision; the call was blocked` };
        }
        return verdict;
      } catch (error) {
        return { decision: "deny", reason: `a guard failed (${error instanceof Error ? error.message : String(error)}); the call was blocked` };
      }
    }),
  );
  const deny = verdicts.find((v) => v.decision === "deny");
  if (deny) return deny;
  const pendings = verdicts.filter((v): v is Extract<GuardDecision, { decision: "pending" }> => v.decision === "pending");
  if (pendings.length === 0) return { decision: "allow" };
  // Several guards want approval: keep every reason and the strictest deadline.
  const reasons = pendings.map((p) => p.reason).filter((r): r is string => Boolean(r));
  const timed = pendings.filter((p) => p.timeoutMs !== undefined).sort((a, b) => a.timeoutMs! - b.timeoutMs!)[0];
  return {
    decision: "pending",
    ...(reasons.length > 0 ? { reason: reasons.join("; ") } : {}),
    ...(timed ? { timeoutMs: timed.timeoutMs!, onTimeout: timed.onTimeout ?? "reject" } : {}),
  };
}

/** The default Preflight actor: every guard looks at every call of the batch. */
export function createPreflightActor(guards: readonly Guard[], now: () => number = Date.now) {
  return fromPromise<PreflightOutput, PreflightInput>(async ({ input, signal }) => {
    // No guards: every call is allowed, and nothing needs the parsed batch.
    if (guards.length === 0) return { decisions: input.calls.map((call): CallDecision => ({ callId: call.id, name: call.name, status: "allowed" })) };
    const byName = new Map(input.tools.map((tool) => [tool.name, tool]));
    const batch: GuardCall[] = input.calls.map((call) => ({
      id: call.id,
      name: call.name,
      arguments: call.arguments,
      args: parseArgs(call.arguments),
      tool: byName.get(call.name),
    }));
    const startedAt = now();
    const ctx: GuardContext = {
      state: input.state,
      runId: input.runId,
      iteration: input.iteration,
      history: input.history,
      batch,
      now: startedAt,
      signal,
    };
    const decisions = await Promise.all(
      batch.map(async (call): Promise<CallDecision> => {
        const verdict = guards.length === 0 ? ({ decision: "allow" } as const) : await decide(guards, call, ctx);
        if (verdict.decision === "allow") return { callId: call.id, name: call.name, status: "allowed" };
        if (verdict.decision === "deny") return { callId: call.id, name: call.name, status: "denied", reason: verdict.reason };
        return {
          callId: call.id,
          name: call.name,
          arguments: call.arguments,
          status: "pending",
          ...(verdict.reason ? { reason: verdict.reason } : {}),
          ...(verdict.timeoutMs !== undefined ? { deadline: startedAt + verdict.timeoutMs, onTimeout: verdict.onTimeout ?? "reject" } : {}),
        };
      }),
    );
    return { decisions };
  });
}
