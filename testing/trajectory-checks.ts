import type { EvalExpectation } from "./evals.js";
import type { Trajectory } from "./trajectory.js";

/** The trajectory half of an eval's expectations: which tools, in what order, and which states. */
type TrajectoryExpectation = Pick<EvalExpectation, "tools" | "toolOrder" | "notTools" | "visits" | "avoids">;

const list = (names: readonly string[]) => `[${names.join(", ")}]`;

/** Whether `expected` appears in `calls` in its order, other calls allowed between. */
function inOrder(calls: readonly string[], expected: readonly string[]): boolean {
  let at = 0;
  for (const name of calls) if (name === expected[at]) at++;
  return at === expected.length;
}

/** The names of `expected` that `calls` lacks, counting repeats (["a", "a"] needs two calls of a). */
function missing(calls: readonly string[], expected: readonly string[]): string[] {
  const left = new Map<string, number>();
  for (const name of calls) left.set(name, (left.get(name) ?? 0) + 1);
  return expected.filter((name) => {
    const n = left.get(name) ?? 0;
    left.set(name, n - 1);
    return n <= 0;
  });
}

/** Whether the run entered `state`: a state's name matches any level of a path, a dotted path matches a run of levels. */
function entered(trajectory: Trajectory, state: string): boolean {
  return trajectory.states.some((config) => config.split(" | ").some((path) => `.${path}.`.includes(`.${state}.`)));
}

/** Every tool and state expectation the trajectory does not meet, in a sentence each. */
export function trajectoryFailures(expect: TrajectoryExpectation, trajectory: Trajectory): string[] {
  const failures: string[] = [];
  // Calls a guard denied never ran: they are not the run's tool use.
  const calls = trajectory.toolCalls.filter((call) => call.outcome !== "denied").map((call) => call.name);
  if (expect.tools !== undefined) {
    const order = expect.toolOrder ?? "inOrder";
    if (order === "exact" && list(calls) !== list(expect.tools)) failures.push(`the tool calls were ${list(calls)}, not exactly ${list(expect.tools)}`);
    if (order === "inOrder" && !inOrder(calls, expect.tools)) failures.push(`the tool calls ${list(calls)} do not hold ${list(expect.tools)} in that order`);
    if (order === "anyOrder") {
      const lacking = missing(calls, expect.tools);
      if (lacking.length > 0) failures.push(`the tool calls ${list(calls)} lack ${list(lacking)}`);
    }
  }
  const forbidden = (expect.notTools ?? []).filter((name) => calls.includes(name));
  if (forbidden.length > 0) failures.push(`it called ${list(forbidden)}, which it should not`);
  for (const state of expect.visits ?? []) if (!entered(trajectory, state)) failures.push(`it never entered ${state}`);
  for (const state of expect.avoids ?? []) if (entered(trajectory, state)) failures.push(`it entered ${state}, which it should not`);
  return failures;
}
