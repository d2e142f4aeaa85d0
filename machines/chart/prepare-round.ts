import type { Message } from "../../actors/messages.js";
import type { Usage } from "../../actors/model-client.js";
import { RoundPlanSchema, type RoundPlan } from "../contract/round-plan.js";
import { JianmuError } from "../../tools/jianmu-error.js";

/**
 * Per-round preparation (`createReactMachine({ prepareRound })`): before each model call the
 * `PreparingRound` state asks the user's function how this round's call differs from the default,
 * validates the answer and keeps it in `loop.round`. Kept in context (so checkpointed) and computed
 * from JSON only, so a restored run makes the same call; the tool executor refuses calls of tools
 * the round did not offer.
 */

/** What `prepareRound` sees: plain data from the run's context, nothing live. */
export interface RoundView {
  runId: string;
  iteration: number;
  /** Model replies so far in this run (0 on the first round). */
  rounds: number;
  messages: readonly Message[];
  /** The agent's fields, read-only. */
  state: Readonly<Record<string, unknown>>;
  /** Names of the agent's tools (what `tools` may choose from). */
  tools: readonly string[];
  usage: Usage;
}

/** Must be pure: same view, same plan (a restored run asks again with the same view). May return nothing. */
export type PrepareRound = (view: RoundView) => RoundPlan | undefined | void;

/** `prepareRound` threw, or returned something that is not a valid plan. */
export class RoundPlanError extends JianmuError {
  static override readonly errorCode = "ROUND_PLAN_ERROR";
  override name = "RoundPlanError";
  constructor(
    readonly field: string,
    problem: string,
  ) {
    super(`prepareRound: ${field} ${problem}`);
  }
}

/** Run the user's function and check its answer; throws RoundPlanError naming the field and the fix. */
export function planRound(prepare: PrepareRound, view: RoundView): RoundPlan {
  let result: unknown;
  try {
    result = prepare(view);
  } catch (error) {
    throw new RoundPlanError("(call)", `threw: ${error instanceof Error ? error.message : String(error)}; it must return a plan (or nothing) without throwing`);
  }
  if (result === undefined) return {};
  if (result !== null && typeof result === "object" && typeof (result as { then?: unknown }).then === "function") {
    throw new RoundPlanError("(result)", "returned a promise; it must be synchronous and pure so a restored run decides the same");
  }
  const parsed = RoundPlanSchema.safeParse(result);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    if (issue.code === "unrecognized_keys") {
      throw new RoundPlanError(issue.keys[0]!, "is not a field of a round plan; use model, tools, toolChoice, extraParams or systemPrompt");
    }
    const field = issue.path.map(String).join(".") || "(result)";
    throw new RoundPlanError(field, `is invalid: ${issue.message} (got ${JSON.stringify(valueAt(result, issue.path)) ?? "undefined"})`);
  }
  const plan = parsed.data;
  const known = new Set(view.tools);
  const unknown = plan.tools?.filter((name) => !known.has(name)) ?? [];
  if (unknown.length > 0) {
    throw new RoundPlanError("tools", `names ${unknown.map((n) => `"${n}"`).join(", ")}, which the agent does not have; choose from: ${view.tools.join(", ") || "(none)"}`);
  }
  const choice = plan.toolChoice;
  if (choice !== undefined && typeof choice === "object" && plan.tools !== undefined && !plan.tools.includes(choice.function.name)) {
    throw new RoundPlanError("toolChoice", `forces "${choice.function.name}", which this round's tools do not offer; add it to tools`);
  }
  return plan;
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let node = root;
  for (const key of path) {
    if (node === null || typeof node !== "object") return undefined;
    node = (node as Record<PropertyKey, unknown>)[key];
  }
  return node;
}
