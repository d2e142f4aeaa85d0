import type { AgentOutput } from "../../index.js";

/**
 * A run that failed, after the example printed why: `node examples/run.mjs` exits 1 on it, and
 * prints nothing more (the reason is already on screen).
 */
export class ExampleRunFailed<T = unknown> extends Error {
  override name = "ExampleRunFailed";
  constructor(
    message: string,
    /** What the example would have returned (a test reads the failed run from it). */
    readonly result?: T,
  ) {
    super(message);
  }
}

/** "the run failed (modelError): model call failed: ... HTTP 404 ...": the reason, and the error behind it. */
export function failureLine(output: Pick<AgentOutput, "status" | "termination">): string {
  const termination = output.termination;
  const detail = termination?.guardrail !== undefined ? `${termination.guardrail}: ${termination.detail ?? ""}` : termination?.detail;
  const why = termination?.error?.message ?? detail;
  return `the run failed (${termination?.reason ?? output.status})${why ? `: ${why}` : ""}`;
}

/**
 * An example's run failed: print why, then throw, so it ends loudly (an `await` that nobody will
 * ever answer, or an exit code 0, would hide it). Its `finally` blocks still clean up.
 */
export function failIfFailed(output: Pick<AgentOutput, "status" | "termination">, log: (line: string) => void, result?: unknown): void {
  if (output.status !== "failed") return;
  const line = failureLine(output);
  log(line);
  throw new ExampleRunFailed(line, result ?? output);
}

/** A run a test means to fail: the example throws (so `node examples/run.mjs` exits 1); resolves with what it carried. */
export async function failedRun<T>(run: Promise<T>): Promise<T> {
  const error = await run.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  if (!(error instanceof ExampleRunFailed)) throw new Error(`expected the run to fail, got ${String(error)}`);
  return error.result as T;
}
