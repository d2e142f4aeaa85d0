import { RunStoppedError } from "../actors/tool-journal.js";
import { JianmuError } from "../tools/jianmu-error.js";
/** What went wrong with a run-queue call; each message names the fix. */
export const RUN_QUEUE_PROBLEMS = [
  "invalid_input",
  "unknown_run",
  "finished_run",
  "not_pending",
  "unknown_agent",
  "connection",
  "permission",
  "schema",
  "closed",
  "damaged",
] as const;
export type RunQueueProblem = (typeof RUN_QUEUE_PROBLEMS)[number];

export class RunQueueError extends JianmuError {
  static override readonly errorCode = "RUN_QUEUE_ERROR";
  override name = "RunQueueError";
  constructor(
    readonly problem: RunQueueProblem,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/**
 * A write carried a fencing token that is no longer the run's: another worker claimed it after this
 * one's lease ran out. The worker stops the run at once and writes nothing more for it.
 */
export class FencedError extends RunStoppedError {
  static override readonly errorCode = "FENCED_ERROR";
  override name = "FencedError";
  constructor(
    runId: string,
    readonly token: number,
  ) {
    super(runId, `run ${runId}: this worker's claim (fencing token ${token}) was taken over by another worker; it stopped the run and wrote nothing`);
  }
}

/**
 * The database stayed unreachable for a held run's write through the rest of its lease: the worker
 * gave the run up (it resumes from its last checkpoint once the lease expires) and writes nothing more.
 */
export class RunGivenUpError extends RunStoppedError {
  static override readonly errorCode = "RUN_GIVEN_UP_ERROR";
  override name = "RunGivenUpError";
}

export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
