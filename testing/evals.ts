import { getStateNodes } from "xstate/graph";
import { z } from "zod";
import { AgentInputSchema, type AgentInput, type AgentOutput } from "../machines/contract/context.js";
import { RunStatusSchema } from "../machines/contract/run-status.js";
import type { ReactMachine } from "../machines/react-machine.js";
import { runAgent, watchedRun, type RunOptions } from "../machines/runner.js";
import { JianmuError } from "../tools/jianmu-error.js";
import { TrajectoryRecorder, type Trajectory } from "./trajectory.js";
import { trajectoryFailures } from "./trajectory-checks.js";

/**
 * Evals: a set of cases run against an agent, each checked for what it answered and for how it got
 * there (its trajectory: the chart's states and its tool calls). A report says, case by case, every
 * expectation that did not hold, in a sentence.
 */

/** A predicate may ask a model (an LLM judge): it may answer later. */
type AnswerPredicate = (answer: string) => boolean | Promise<boolean>;
const TextMatcherSchema = z.union([z.string(), z.instanceof(RegExp), z.custom<AnswerPredicate>((value) => typeof value === "function", { message: "must be a string, a RegExp or a function (answer) => boolean (or a promise of one)" })]);

/** What a case expects. Every field is optional; each one given must hold. */
export const EvalExpectationSchema = z.strictObject({
  /** How the run ends. */
  status: RunStatusSchema.optional(),
  /** The final answer: contains this text, matches this RegExp, or satisfies this predicate (which may be async: an LLM judge). */
  answer: TextMatcherSchema.optional(),
  /** Tool names the run calls, in the sense of `toolOrder`. */
  tools: z.array(z.string().min(1)).optional(),
  /**
   * `inOrder` (default): these calls happen in this order, others may come between; `exact`: the calls
   * are exactly these, in this order; `anyOrder`: each happens (as often as it is listed), in any order.
   */
  toolOrder: z.enum(["inOrder", "exact", "anyOrder"]).optional(),
  /** Tools the run never calls. */
  notTools: z.array(z.string().min(1)).optional(),
  /** States of the chart the run passes through (a state's name, e.g. "AwaitingApproval", or a dotted path). */
  visits: z.array(z.string().min(1)).optional(),
  /** States the run never enters. */
  avoids: z.array(z.string().min(1)).optional(),
  /** The most model rounds it may take. */
  maxRounds: z.number().int().positive().optional(),
  /** The most tokens it may use. */
  maxTokens: z.number().int().positive().optional(),
});
export type EvalExpectation = z.input<typeof EvalExpectationSchema>;

const EvalCaseSchema = z.strictObject({
  /** Names the case in the report. */
  name: z.string().min(1),
  /** The run's input: a user message's text, or an `AgentInput` (checked here, before any case runs). */
  input: z.union([z.string(), AgentInputSchema]),
  expect: EvalExpectationSchema,
});
export type EvalCase = z.input<typeof EvalCaseSchema>;

/** One case's verdict: `failures` says, in a sentence each, every expectation that did not hold. */
export interface EvalResult {
  name: string;
  pass: boolean;
  failures: string[];
  output: AgentOutput;
  trajectory: Trajectory;
  durationMs: number;
}

export interface EvalReport {
  results: EvalResult[];
  passed: number;
  failed: number;
}

export interface EvalOptions {
  /** How many cases run at once (default 1: one after another). */
  concurrency?: number;
  /** Passed to each `runAgent` (its `onEvent` and `inspect` still get every event). */
  runOptions?: RunOptions;
  /** Told of each case as it ends (in the order they end): a long eval shows its progress. */
  onResult?: (result: EvalResult) => void;
}

/** An eval case or option that cannot be used, naming the field and the fix. */
export class EvalDefinitionError extends JianmuError {
  static override readonly errorCode = "EVAL_DEFINITION_ERROR";
  override name = "EvalDefinitionError";
}

/** The state names the machine's chart has: every node's key, at any depth (XState's own walk of the chart, as model-based-chart.ts reads it). */
function chartStateNames(machine: ReactMachine): Set<string> {
  return new Set([machine.root.key, ...getStateNodes(machine.root).map((node) => node.key)]);
}

/** What is wrong with a case, as its field and the problem; undefined when it fits. */
function caseProblem(evalCase: unknown): string | undefined {
  const first = (error: z.ZodError, prefix: string) => {
    const issue = error.issues[0]!;
    return `${prefix}${issue.path.map(String).join(".") || "(case)"} ${issue.message}`;
  };
  // An input that is not text is checked as the run checks it, so the problem names the input's own field.
  const input = (evalCase as { input?: unknown } | null | undefined)?.input;
  if (input !== undefined && typeof input !== "string") {
    const checked = AgentInputSchema.safeParse(input);
    if (!checked.success) return first(checked.error, "input.");
  }
  const parsed = EvalCaseSchema.safeParse(evalCase);
  return parsed.success ? undefined : first(parsed.error, "");
}

/** Each case checked before any runs: a mistake in the last one must not cost the runs before it. */
function checkedCases(machine: ReactMachine, cases: readonly EvalCase[]): EvalCase[] {
  if (!Array.isArray(cases)) throw new EvalDefinitionError("runEvals: cases must be an array of { name, input, expect }");
  const states = chartStateNames(machine);
  const names = new Set<string>();
  return cases.map((evalCase, index) => {
    const problem = caseProblem(evalCase);
    if (problem !== undefined) throw new EvalDefinitionError(`runEvals: cases[${index}].${problem} (a case is { name, input, expect })`);
    if (names.has(evalCase.name)) throw new EvalDefinitionError(`runEvals: cases[${index}].name repeats "${evalCase.name}": each case needs its own name`);
    names.add(evalCase.name);
    for (const field of ["visits", "avoids"] as const) {
      for (const state of evalCase.expect[field] ?? []) {
        const unknown = state.split(".").find((part: string) => !states.has(part));
        if (unknown !== undefined) throw new EvalDefinitionError(`runEvals: cases[${index}].expect.${field} names "${state}", but the agent's chart has no state "${unknown}"; use the chart's names (e.g. AwaitingApproval, GuardingOutput)`);
      }
    }
    return evalCase;
  });
}

/** What the answer matcher says of `answer`, or why it failed. */
async function answerFailure(matcher: EvalExpectation["answer"], answer: string | null): Promise<string | undefined> {
  if (matcher === undefined) return undefined;
  const text = answer ?? "";
  const shown = JSON.stringify(text.length > 200 ? `${text.slice(0, 200)}…` : text);
  if (typeof matcher === "string") return text.includes(matcher) ? undefined : `the answer does not contain ${JSON.stringify(matcher)}: ${shown}`;
  if (matcher instanceof RegExp) return matcher.test(text) ? undefined : `the answer does not match ${String(matcher)}: ${shown}`;
  let held: boolean;
  try {
    held = (await matcher(text)) === true;
  } catch (error) {
    return `the answer check threw: ${error instanceof Error ? error.message : String(error)}`;
  }
  return held ? undefined : `the answer check said no: ${shown}`;
}

/** Every expectation of `expect` that `output` and `trajectory` do not meet, in a sentence each. */
export async function evalFailures(expect: EvalExpectation, output: AgentOutput, trajectory: Trajectory): Promise<string[]> {
  const failures: string[] = [];
  if (expect.status !== undefined && output.status !== expect.status) {
    const why = output.termination ? ` (${output.termination.reason}${output.termination.detail ? `: ${output.termination.detail}` : ""})` : "";
    failures.push(`the run ended ${output.status}${why}, not ${expect.status}`);
  }
  const answer = await answerFailure(expect.answer, output.finalAnswer);
  if (answer) failures.push(answer);
  failures.push(...trajectoryFailures(expect, trajectory));
  if (expect.maxRounds !== undefined && output.rounds > expect.maxRounds) failures.push(`it took ${output.rounds} model rounds, more than ${expect.maxRounds}`);
  if (expect.maxTokens !== undefined && output.usage.totalTokens > expect.maxTokens) failures.push(`it used ${output.usage.totalTokens} tokens, more than ${expect.maxTokens}`);
  return failures;
}

async function runCase(machine: ReactMachine, evalCase: EvalCase, options: RunOptions): Promise<EvalResult> {
  const recorder = new TrajectoryRecorder();
  const input: AgentInput = typeof evalCase.input === "string" ? { messages: [{ role: "user", content: evalCase.input }] } : evalCase.input;
  const started = performance.now();
  const output = (await runAgent(machine, input, watchedRun(options, recorder))) as AgentOutput;
  const trajectory = recorder.trajectory;
  const failures = await evalFailures(evalCase.expect, output, trajectory);
  return { name: evalCase.name, pass: failures.length === 0, failures, output, trajectory, durationMs: performance.now() - started };
}

/**
 * Run every case against `machine` (`options.concurrency` at a time) and check each one's
 * expectations. A run that fails is a result like any other (its `status` may be what a case
 * expects); the report keeps the cases' order.
 */
export async function runEvals(machine: ReactMachine, cases: readonly EvalCase[], options: EvalOptions = {}): Promise<EvalReport> {
  const concurrency = options.concurrency ?? 1;
  if (!Number.isInteger(concurrency) || concurrency < 1) throw new EvalDefinitionError(`runEvals: options.concurrency must be a whole number of at least 1, got ${String(concurrency)}`);
  const checked = checkedCases(machine, cases);
  const results: EvalResult[] = new Array(checked.length);
  let next = 0;
  const lane = async () => {
    for (let index = next++; index < checked.length; index = next++) {
      results[index] = await runCase(machine, checked[index]!, options.runOptions ?? {});
      options.onResult?.(results[index]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, checked.length) }, lane));
  const passed = results.filter((result) => result.pass).length;
  return { results, passed, failed: results.length - passed };
}

/** The report as lines of text: one per case (✓ or ✗), each failure under it, and the totals. */
export function formatEvalReport(report: EvalReport): string {
  return [...report.results.map(formatEvalResult), evalTotals(report)].join("\n");
}

/** One case's lines: ✓ or ✗ with its name and figures, then each failure. */
export function formatEvalResult(result: EvalResult): string {
  const rounds = `${result.output.rounds} round${result.output.rounds === 1 ? "" : "s"}`;
  return [`${result.pass ? "✓" : "✗"} ${result.name} (${Math.round(result.durationMs)} ms, ${rounds}, ${result.output.usage.totalTokens} tokens)`, ...result.failures.map((failure) => `    ${failure}`)].join("\n");
}

/** The report's last line. */
export function evalTotals(report: EvalReport): string {
  return `${report.passed} of ${report.results.length} cases passed`;
}
