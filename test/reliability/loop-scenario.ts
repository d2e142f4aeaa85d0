import fc from "fast-check";

/*
 * What a generated run looks like: a model script (text, tool calls to known and unknown tools
 * with good, malformed and huge arguments, errors), a guard verdict for every call, how the
 * approver answers each pending call, and when (if ever) the run is cancelled or pestered with
 * stray commands. Plain data, so fast-check can print and shrink a failing case.
 */

/** The instrumented tools of loop-tools.ts, plus one the agent does not have. */
export const TOOL_NAMES = ["echo", "slow", "fails", "hangs", "big", "ghost"] as const;
export type ToolName = (typeof TOOL_NAMES)[number];

export type ArgsKind = "valid" | "badJson" | "array" | "wrongType" | "empty" | "huge";

/** How the approver answers one pending call. */
export type Answer =
  | "approve"
  | "approveEdited"
  | "badEditThenApprove"
  | "reject"
  | "rejectTwice"
  | "unknownThenApprove"
  | "cancel"
  /** Never answers: the call has a deadline, so the timer decides. */
  | "ignore";

export type Verdict =
  | { kind: "allow" }
  | { kind: "deny" }
  /** The guard throws: the call must be denied (fail closed). */
  | { kind: "throw" }
  /** The guard returns something that is not a decision: denied too. */
  | { kind: "invalid" }
  | { kind: "pending"; answer: Answer; timeout?: { ms: number; onTimeout: "reject" | "fail" } };

/** `fresh`: a unique id; `reused`: "call_0" (some servers reuse ids, even inside one reply); `empty`: "" (the machine mints one). */
export type IdMode = "fresh" | "reused" | "empty";

export interface CallSpec {
  tool: ToolName;
  args: ArgsKind;
  verdict: Verdict;
  id: IdMode;
}

export type Usage = { promptTokens: number; completionTokens: number };

export type TurnSpec =
  | { kind: "text"; text: string; usage: Usage }
  | { kind: "calls"; text: string; calls: CallSpec[]; usage: Usage }
  | { kind: "error"; status: number };

export type CancelSpec =
  | { at: "task"; n: number; via: "event" | "signal" }
  | { at: "event"; n: number; via: "event" | "signal" };

/** A command nobody waits for, sent when the n-th telemetry event is seen. */
export type StrayCommand =
  | { kind: "approveUnknown" }
  | { kind: "rejectUnknown" }
  | { kind: "unknownType" }
  | { kind: "approveMalformed" }
  | { kind: "approveDecided" };

export interface Scenario {
  turns: TurnSpec[];
  maxIterations: number;
  maxBudgetTokens?: number;
  maxToolOutputChars: number;
  toolExecution: "serial" | "parallel" | "auto";
  cancel?: CancelSpec;
  strays: { atEvent: number; command: StrayCommand }[];
}

const usage: fc.Arbitrary<Usage> = fc.record({ promptTokens: fc.nat(40), completionTokens: fc.nat(20) });

const answer: fc.Arbitrary<Answer> = fc.constantFrom(
  "approve",
  "approveEdited",
  "badEditThenApprove",
  "reject",
  "rejectTwice",
  "unknownThenApprove",
  "cancel",
  "ignore",
);

const pending: fc.Arbitrary<Verdict> = fc
  .record({ answer, timed: fc.boolean(), ms: fc.integer({ min: 1, max: 4 }), onTimeout: fc.constantFrom("reject" as const, "fail" as const) })
  .map(({ answer, timed, ms, onTimeout }): Verdict =>
    // A call nobody answers must have a deadline, or the run would rightly wait forever.
    timed || answer === "ignore" ? { kind: "pending", answer, timeout: { ms, onTimeout } } : { kind: "pending", answer },
  );

const verdict: fc.Arbitrary<Verdict> = fc.oneof(
  { weight: 4, arbitrary: fc.constant<Verdict>({ kind: "allow" }) },
  { weight: 1, arbitrary: fc.constant<Verdict>({ kind: "deny" }) },
  { weight: 1, arbitrary: fc.constant<Verdict>({ kind: "throw" }) },
  { weight: 1, arbitrary: fc.constant<Verdict>({ kind: "invalid" }) },
  { weight: 3, arbitrary: pending },
);

const call: fc.Arbitrary<CallSpec> = fc.record({
  tool: fc.constantFrom(...TOOL_NAMES),
  args: fc.oneof(
    { weight: 6, arbitrary: fc.constant<ArgsKind>("valid") },
    { weight: 1, arbitrary: fc.constantFrom<ArgsKind>("badJson", "array", "wrongType", "empty", "huge") },
  ),
  verdict,
  id: fc.oneof({ weight: 8, arbitrary: fc.constant<IdMode>("fresh") }, { weight: 1, arbitrary: fc.constantFrom<IdMode>("reused", "empty") }),
});

const turn: fc.Arbitrary<TurnSpec> = fc.oneof(
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("text" as const), text: fc.string({ maxLength: 30 }), usage }) },
  {
    weight: 5,
    arbitrary: fc.record({ kind: fc.constant("calls" as const), text: fc.string({ maxLength: 10 }), calls: fc.array(call, { minLength: 1, maxLength: 3 }), usage }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("error" as const), status: fc.constantFrom(400, 429, 500, 503) }) },
);

const stray: fc.Arbitrary<StrayCommand> = fc.oneof(
  fc.constant({ kind: "approveUnknown" as const }),
  fc.constant({ kind: "rejectUnknown" as const }),
  fc.constant({ kind: "unknownType" as const }),
  fc.constant({ kind: "approveMalformed" as const }),
  fc.constant({ kind: "approveDecided" as const }),
);

export function scenarioArbitrary(options: { cancel: boolean }): fc.Arbitrary<Scenario> {
  const cancel: fc.Arbitrary<CancelSpec | undefined> = options.cancel
    ? fc.oneof(
        fc.record({ at: fc.constant("task" as const), n: fc.nat(12), via: fc.constantFrom("event" as const, "signal" as const) }),
        fc.record({ at: fc.constant("event" as const), n: fc.nat(30), via: fc.constantFrom("event" as const, "signal" as const) }),
      )
    : fc.constant(undefined);
  return fc
    .record({
      turns: fc.array(turn, { minLength: 1, maxLength: 6 }),
      maxIterations: fc.integer({ min: 1, max: 5 }),
      // Half the runs have a budget, from one no prompt fits to one a few rounds' prompts cross (the
      // prompt's estimated size counts before each call, issue 33): budgets then refuse at any round.
      budget: fc.option(fc.integer({ min: 1, max: 1_500 }), { nil: undefined, freq: 2 }),
      maxToolOutputChars: fc.integer({ min: 100, max: 1_500 }),
      toolExecution: fc.constantFrom("serial" as const, "parallel" as const, "auto" as const),
      cancel,
      strays: fc.array(fc.record({ atEvent: fc.nat(40), command: stray }), { maxLength: 3 }),
    })
    .map(({ budget, cancel, ...rest }): Scenario => ({
      ...rest,
      ...(budget !== undefined ? { maxBudgetTokens: budget } : {}),
      ...(cancel !== undefined ? { cancel } : {}),
    }));
}

/** True when nothing in the scenario can stop the run early, so its outcome is fully predictable. */
export function isDeterministic(scenario: Scenario): boolean {
  if (scenario.cancel) return false;
  return scenario.turns.every(
    (t) =>
      t.kind !== "calls" ||
      t.calls.every((c) => c.verdict.kind !== "pending" || (c.verdict.answer !== "cancel" && c.verdict.timeout?.onTimeout !== "fail")),
  );
}

/** Where a run without cancellation or failing deadlines must end: status, reason, rounds and usage. */
export function expectedOutcome(scenario: Scenario): {
  status: "succeeded" | "failed";
  reason?: string;
  rounds: number;
  totalTokens: number;
} {
  let total = 0;
  let rounds = 0;
  for (let iteration = 0; ; iteration++) {
    if (scenario.maxBudgetTokens !== undefined && total >= scenario.maxBudgetTokens) return { status: "failed", reason: "tokenBudget", rounds, totalTokens: total };
    const next = scenario.turns[iteration];
    if (!next || next.kind === "error") return { status: "failed", reason: "modelError", rounds, totalTokens: total };
    rounds += 1;
    total += next.usage.promptTokens + next.usage.completionTokens;
    if (next.kind === "text") return { status: "succeeded", rounds, totalTokens: total };
    if (iteration + 1 >= scenario.maxIterations) return { status: "failed", reason: "maxIterations", rounds, totalTokens: total };
  }
}

/**
 * Where a budget may refuse a call before it is made (issue 33: a call whose prompt alone would cross
 * the budget is not made): before each model call the prediction makes with a token budget set. The
 * prompt's estimated size is not known here, so a run may end (tokenBudget) at any of these points.
 */
export function budgetRefusalPoints(scenario: Scenario): { rounds: number; totalTokens: number }[] {
  if (scenario.maxBudgetTokens === undefined) return [];
  const points: { rounds: number; totalTokens: number }[] = [];
  let total = 0;
  // Up to one past the script: a call with no scripted turn left is still made (and fails), so a budget may refuse it too.
  for (let iteration = 0; iteration <= scenario.turns.length; iteration++) {
    if (total >= scenario.maxBudgetTokens) break;
    points.push({ rounds: iteration, totalTokens: total });
    const next = scenario.turns[iteration];
    if (!next || next.kind === "error") break;
    total += next.usage.promptTokens + next.usage.completionTokens;
    if (next.kind === "text" || iteration + 1 >= scenario.maxIterations) break;
  }
  return points;
}
