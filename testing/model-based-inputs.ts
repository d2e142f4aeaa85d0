import { parseArgs, type CallDecision, type GuardDecision } from "../actors/guard.js";
import type { LLMOutput } from "../actors/llm-step.js";
import type { ToolCall } from "../actors/messages.js";
import { planCall, type PlannedTool } from "../actors/call-plan.js";
import type { ExecutorInput, ExecutorOutput } from "../actors/tool-executor.js";
import { failedOutcome, succeededOutcome, type ToolOutcome } from "../actors/tool-outcome.js";
import type { JsonSchema, ToolInfo } from "../tools/tool.js";

/**
 * What the invoked actors could answer during pure traversal: model turns made from scripts,
 * guard verdicts under a policy, default arguments from a tool's schema, and the outcomes the
 * real executor would give (its deterministic checks; a runnable call is assumed to succeed).
 */

/** One model turn the traversal may feed the agent wherever it waits for the model. */
export interface ModelTurnScript {
  /** Names the turn in path descriptions, e.g. "asks for the weather". */
  label?: string;
  content?: string;
  toolCalls?: readonly { name: string; arguments: Record<string, unknown> | string }[];
  usage?: { promptTokens: number; completionTokens: number };
  finishReason?: string;
}

/** The call as the policy sees it. */
export interface PolicyCall {
  readonly id: string;
  readonly name: string;
  /** Raw JSON text, as the model sent it. */
  readonly arguments: string;
  /** Parsed arguments, or undefined when they are not a JSON object. */
  readonly args: Readonly<Record<string, unknown>> | undefined;
}

/** What your guards are expected to decide for a call (the same shape your guards return). */
export type PolicyDecision = GuardDecision;
export type Policy = (call: PolicyCall) => PolicyDecision;

/** The clock of pure traversal: approval deadlines are this plus the guard's timeout. */
export const PURE_CLOCK = 1_000_000_000_000;

function toolCallId(round: number, index: number): string {
  return `call_r${round}_${index}`;
}

/** How a turn reads in a path description. */
export function scriptLabel(script: ModelTurnScript): string {
  if (script.label) return script.label;
  const calls = script.toolCalls ?? [];
  if (calls.length > 0) return `calls ${calls.map((call) => call.name).join(" + ")}`;
  return script.content ? `answers "${script.content.length > 24 ? `${script.content.slice(0, 21)}...` : script.content}"` : "answers with nothing";
}

/** The model turn a script stands for in a given round (call ids are unique per round). */
export function turnOf(script: ModelTurnScript, round: number): LLMOutput {
  const toolCalls = (script.toolCalls ?? []).map((call, index) => ({
    id: toolCallId(round, index),
    name: call.name,
    arguments: typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments),
  }));
  const promptTokens = script.usage?.promptTokens ?? 10;
  const completionTokens = script.usage?.completionTokens ?? 5;
  return {
    content: script.content ?? "",
    toolCalls,
    usage: { promptTokens, completionTokens, totalTokens: promptTokens + completionTokens },
    finishReason: script.finishReason ?? (toolCalls.length > 0 ? "tool_calls" : "stop"),
    model: "scripted",
  };
}

function isDecision(value: unknown): value is PolicyDecision {
  const decision = (value as { decision?: unknown } | null)?.decision;
  return decision === "allow" || decision === "deny" || decision === "pending";
}

/** What the guard step would answer under a policy. */
export function decisionsUnder(policy: Policy, calls: readonly ToolCall[], clock: number): CallDecision[] {
  return calls.map((call): CallDecision => {
    const verdict: unknown = policy({ id: call.id, name: call.name, arguments: call.arguments, args: parseArgs(call.arguments) });
    if (!isDecision(verdict)) {
      throw new TypeError(`generateAgentPaths: options.policy returned ${JSON.stringify(verdict)} for ${call.name}; return { decision: "allow" | "deny" | "pending", ... } like a guard`);
    }
    if (verdict.decision === "allow") return { callId: call.id, name: call.name, status: "allowed" };
    if (verdict.decision === "deny") return { callId: call.id, name: call.name, status: "denied", reason: verdict.reason };
    return {
      callId: call.id,
      name: call.name,
      status: "pending",
      ...(verdict.reason ? { reason: verdict.reason } : {}),
      ...(verdict.timeoutMs !== undefined ? { deadline: clock + verdict.timeoutMs, onTimeout: verdict.onTimeout ?? "reject" } : {}),
    };
  });
}

/** Arguments that fit a (simple) JSON Schema: required properties only, the plainest value of each type. */
export function exampleArguments(schema: JsonSchema): Record<string, unknown> {
  const value = exampleValue(schema);
  return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

function exampleValue(schema: JsonSchema): unknown {
  if ("const" in schema) return schema["const"];
  const options = schema["enum"];
  if (Array.isArray(options) && options.length > 0) return options[0];
  const alternatives = schema["anyOf"] ?? schema["oneOf"];
  if (Array.isArray(alternatives) && alternatives.length > 0) return exampleValue(alternatives[0] as JsonSchema);
  const type = Array.isArray(schema["type"]) ? schema["type"][0] : schema["type"];
  const minimum = typeof schema["minimum"] === "number" ? schema["minimum"] : undefined;
  switch (type) {
    case "string":
      return "example".padEnd(typeof schema["minLength"] === "number" ? schema["minLength"] : 0, "x");
    case "integer":
      return Math.max(1, Math.ceil(minimum ?? 1));
    case "number":
      return Math.max(1, minimum ?? 1);
    case "boolean":
      return true;
    case "null":
      return null;
    case "array":
      return [];
    case "object": {
      const properties = (schema["properties"] ?? {}) as Record<string, JsonSchema>;
      const required = Array.isArray(schema["required"]) ? (schema["required"] as string[]) : [];
      return Object.fromEntries(required.filter((key) => properties[key]).map((key) => [key, exampleValue(properties[key]!)]));
    }
    default:
      return {};
  }
}

/** Required properties the arguments lack: the executor's schema check would reject them. */
function missingRequired(schema: JsonSchema, args: Record<string, unknown>): string[] {
  const required = Array.isArray(schema["required"]) ? (schema["required"] as unknown[]) : [];
  return required.filter((key): key is string => typeof key === "string" && !(key in args));
}

/** A tool as pure traversal knows it: its description, checked only for the required properties its arguments lack. */
function standIn(info: ToolInfo): ToolInfo & PlannedTool {
  return {
    ...info,
    validate(args) {
      const value = (args ?? {}) as Record<string, unknown>;
      const missing = missingRequired(info.inputSchema, value);
      return missing.length > 0 ? { ok: false, error: `missing ${missing.join(", ")}` } : { ok: true, value };
    },
  };
}

/**
 * The outcome the real executor gives each call: the same plan (`planCall`, actors/call-plan.ts),
 * with the schema check reduced to required properties and a runnable call assumed to succeed.
 */
export function predictOutcomes(input: ExecutorInput, tools: readonly ToolInfo[]): ExecutorOutput {
  const decisionOf = new Map(input.decisions.map((d) => [d.callId, d]));
  const toolOf = new Map(tools.map((tool) => [tool.name, standIn(tool)]));
  const outcomes = input.calls.map((call): ToolOutcome => {
    const plan = planCall({
      call,
      decision: decisionOf.get(call.id),
      lookup: (name) => toolOf.get(name),
      toolNames: () => tools.map((tool) => tool.name),
      offered: input.offered,
    });
    switch (plan.kind) {
      case "answer":
        return plan.outcome;
      case "refuse":
        return failedOutcome(call, plan.errorKind, plan.message, 0);
      case "run":
        return succeededOutcome(call, plan.tool, `(${call.name} ran)`, 0);
    }
  });
  return { outcomes };
}
