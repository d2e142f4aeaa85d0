import { z } from "zod";
import { human, toolMessage, type ToolCall } from "../../actors/messages.js";
import type { JsonSchema, ToolInfo } from "../../tools/tool.js";
import type { OutputStrategy } from "../contract/config.js";
import type { AgentContext } from "../contract/context.js";
import type { OutputCheck } from "../contract/output-check.js";
import type { HostState, StateAccess } from "../contract/state-access.js";

/**
 * Structured final output (`createReactMachine({ output: schema })`): how the model is asked for
 * it, and how its answer is checked in the `CheckOutput` state. Everything here is decided once per
 * machine, except the check itself, which is pure: same text in, same verdict out, so a restored
 * run checks the same way.
 */

/** The tool the model calls to give its final result (strategy "tool"). */
export const FINAL_RESULT_TOOL = "final_result";

export interface OutputPlan {
  /** "auto" resolved for this machine's model. */
  readonly strategy: "tool" | "native";
  /** The schema as JSON Schema: the final-result tool's parameters, or the response_format's schema. */
  readonly jsonSchema: JsonSchema;
  /** Strategy "tool": offered beside the agent's tools on every round. */
  readonly tool?: ToolInfo;
  /** Strategy "native": merged into every request's extra params. */
  readonly responseFormat?: Record<string, unknown>;
  /** Check the model's raw final text against the schema. */
  check(raw: string): OutputCheck;
  /** The parsed value of a raw text the check found valid (undefined otherwise). */
  value(raw: string): unknown;
}

/** Models whose provider honours `response_format: json_schema` (OpenAI structured outputs). */
const NATIVE_MODELS = /^(gpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|chatgpt-4o|o1|o3|o4)(\b|-|$)/;

/**
 * "auto" picks "native" for a model known to support json_schema, and "tool" otherwise (a final-result
 * tool works with every tool-calling model). Decided when the machine is made, from the model its
 * requests go to (`config.model`, else the model client's `model`), so the chart, and every round, agree.
 */
export function resolveStrategy(strategy: OutputStrategy, model: string | undefined): "tool" | "native" {
  if (strategy !== "auto") return strategy;
  return model !== undefined && NATIVE_MODELS.test(model) ? "native" : "tool";
}

/** Options for `planOutput`: the configured strategy and model, and the agent's static tool names (to catch a clash). */
export interface OutputPlanOptions {
  strategy: OutputStrategy;
  model: string | undefined;
  toolNames: readonly string[];
}

export function planOutput(schema: z.ZodType, options: OutputPlanOptions): OutputPlan {
  const { $schema: _ignored, ...jsonSchema } = z.toJSONSchema(schema, { io: "input", target: "draft-7" }) as JsonSchema;
  const strategy = resolveStrategy(options.strategy, options.model);
  const check = (raw: string): OutputCheck => {
    const result = parseOutput(schema, raw);
    return result.ok ? { status: "valid", raw } : { status: "invalid", raw, error: result.error };
  };
  const value = (raw: string): unknown => {
    const result = parseOutput(schema, raw);
    return result.ok ? result.value : undefined;
  };
  if (strategy === "tool") {
    if (options.toolNames.includes(FINAL_RESULT_TOOL)) {
      throw new TypeError(`createReactMachine: a tool is named "${FINAL_RESULT_TOOL}", which the structured output's final-result tool uses; rename that tool or set config.outputStrategy: "native"`);
    }
    const tool: ToolInfo = {
      name: FINAL_RESULT_TOOL,
      description: "Give your final answer with this tool, once you have it: its arguments are the result. Call it alone, after any other tools you need.",
      inputSchema: jsonSchema,
      parallelSafe: false,
      effectTags: [],
    };
    return { strategy, jsonSchema, tool, check, value };
  }
  const strict = strictVariant(jsonSchema);
  const responseFormat = {
    type: "json_schema",
    json_schema: { name: "final_output", schema: strict ?? jsonSchema, strict: strict !== undefined },
  };
  return { strategy, jsonSchema, responseFormat, check, value };
}

/** The pure check: parse the text as JSON, then validate it. Errors name each field that is wrong. */
export function parseOutput(schema: z.ZodType, raw: string): { ok: true; value: unknown } | { ok: false; error: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(stripFence(raw));
  } catch (error) {
    return { ok: false, error: `the final output is not valid JSON (${error instanceof Error ? error.message : String(error)})` };
  }
  const result = schema.safeParse(parsed);
  return result.success ? { ok: true, value: result.data } : { ok: false, error: describeIssues(result.error) };
}

/** Models sometimes wrap JSON in a Markdown code fence even when asked not to. */
function stripFence(text: string): string {
  const fenced = /^\s*```(?:json)?\s*\n([\s\S]*?)\n?```\s*$/.exec(text);
  return fenced ? fenced[1]! : text;
}

function describeIssues(error: z.ZodError): string {
  const lines = error.issues.slice(0, 10).map((issue) => {
    const field = issue.path.length > 0 ? issue.path.map(String).join(".") : "(the whole value)";
    return `${field}: ${issue.message}`;
  });
  return `the final output does not fit the schema: ${lines.join("; ")}`;
}

/** The raw final text the model gave this round: the final-result call's arguments, or else the reply text. */
export function rawFinalOutput(calls: readonly ToolCall[], finalAnswer: string | null): string {
  const call = calls.find((c) => c.name === FINAL_RESULT_TOOL);
  return call ? call.arguments : (finalAnswer ?? "");
}

/** The observation the model reads after an invalid final output. */
export function invalidOutputObservation(plan: OutputPlan, error: string): string {
  const how =
    plan.strategy === "tool"
      ? `Call the ${FINAL_RESULT_TOOL} tool again with arguments that fit its schema.`
      : "Reply again with only a JSON value that fits the requested schema.";
  return `Your final output was not accepted: ${error}. ${how}`;
}

/**
 * The json_schema `strict` mode accepts only objects whose every property is required and that
 * allow no others. Returns such a copy of the schema, or undefined when it has optional properties
 * (the request then goes without `strict`, and `CheckOutput` still validates the answer).
 */
function strictVariant(schema: JsonSchema): JsonSchema | undefined {
  let compatible = true;
  const visit = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(visit);
    if (node === null || typeof node !== "object") return node;
    const out: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(node)) out[key] = key === "properties" ? mapValues(value, visit) : visit(value);
    if (out["type"] === "object" && out["properties"] !== undefined) {
      const keys = Object.keys(out["properties"] as object);
      const required = Array.isArray(out["required"]) ? (out["required"] as string[]) : [];
      if (!keys.every((k) => required.includes(k))) compatible = false;
      out["additionalProperties"] = false;
    }
    return out;
  };
  const result = visit(schema) as JsonSchema;
  return compatible ? result : undefined;
}

function mapValues(value: unknown, fn: (v: unknown) => unknown): unknown {
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, fn(v)]));
}

// ---- the context updates of CheckOutput ------------------------------------------------------

/** Entering CheckOutput: check the round's final output; an invalid one counts toward `outputRetries`. */
export function recordOutputCheck(context: AgentContext, access: StateAccess, plan: OutputPlan): AgentContext {
  const raw = rawFinalOutput(access.read<ToolCall[]>(context.state, "actions"), access.read<string | null>(context.state, "finalAnswer"));
  const output = plan.check(raw);
  const outputFailures = (context.loop.outputFailures ?? 0) + (output.status === "invalid" ? 1 : 0);
  return { ...context, loop: { ...context.loop, output, outputFailures } };
}

/**
 * The final-result call (and any call beside it, which does not run: the result ends the run, or goes
 * back for a fix first) gets its tool message, so the history stays valid for a next run.
 */
function answerCalls(context: AgentContext, access: StateAccess, finalContent: string): HostState {
  const calls = access.read<ToolCall[]>(context.state, "actions");
  if (!calls.some((c) => c.name === FINAL_RESULT_TOOL)) return context.state;
  const messages = calls.map((call) =>
    call.name === FINAL_RESULT_TOOL
      ? toolMessage(call.id, finalContent, { name: call.name, ...(context.loop.output?.status === "invalid" ? { isError: true } : {}) })
      : toolMessage(call.id, `Not executed: it was called together with ${FINAL_RESULT_TOOL}. Call it alone, after the tools you need.`, { name: call.name, isError: true }),
  );
  return access.append(context.state, "messages", messages);
}

/** Valid: the run is done; `finalAnswer` is the output's JSON text as the model wrote it. */
export function acceptOutput(context: AgentContext, access: StateAccess): AgentContext {
  const raw = context.loop.output?.raw ?? "";
  const state = access.write(answerCalls(context, access, "Final result accepted."), { done: true, finalAnswer: raw });
  return { ...context, state };
}

/** Invalid, retries left: the model reads what is wrong (naming the fields); the loop goes on. */
export function rejectOutput(context: AgentContext, access: StateAccess, plan: OutputPlan): AgentContext {
  const check = context.loop.output;
  const error = check?.status === "invalid" ? check.error : "the final output was not accepted";
  const observation = invalidOutputObservation(plan, error);
  let state = answerCalls(context, access, observation);
  const calledTool = access.read<ToolCall[]>(context.state, "actions").some((c) => c.name === FINAL_RESULT_TOOL);
  if (!calledTool) state = access.append(state, "messages", [human(observation)]);
  state = access.write(state, { done: false, finalAnswer: null });
  return { ...context, state };
}
