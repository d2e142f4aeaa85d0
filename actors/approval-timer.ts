import { fromPromise } from "xstate";

export interface ApprovalTimerInput {
  /** Epoch ms of the earliest pending deadline, or null when no pending call has one. */
  deadline: number | null;
}

export interface ApprovalTimerOutput {
  /** When the timer fired (epoch ms): every pending call past its deadline expires. */
  firedAt: number;
}

/**
 * Waits for the earliest approval deadline. The deadline is absolute and lives in context, so a
 * run restored in another process waits only for what is left (XState does not re-arm `after`
 * delays on restore; an invoked actor restarted from the snapshot does).
 */
export function createApprovalTimerActor(now: () => number = Date.now) {
  return fromPromise<ApprovalTimerOutput, ApprovalTimerInput>(
    ({ input, signal }) =>
      new Promise<ApprovalTimerOutput>((resolve) => {
        if (input.deadline === null) return; // nothing to wait for; no timer keeps the process alive
        const timer = setTimeout(() => resolve({ firedAt: now() }), Math.max(0, input.deadline - now()));
        signal.addEventListener("abort", () => clearTimeout(timer), { once: true });
      }),
  );
}
