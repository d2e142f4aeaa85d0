import type { AgentOutput } from "../machines/context.js";
import { RunQueueError } from "./errors.js";
import type { QueueSignal } from "./run-store.js";

/**
 * Resolve with a run's output once `read` finds one: on every `finished` signal for the run and at
 * least every `pollMs` (signals can be lost). `read` rejects for an unknown run.
 */
export async function waitForOutput(
  read: () => Promise<AgentOutput | undefined>,
  subscribe: (listener: (signal: QueueSignal) => void) => () => void,
  runId: string,
  pollMs: number,
  signal?: AbortSignal,
): Promise<AgentOutput> {
  let poke: (() => void) | undefined;
  const unsubscribe = subscribe((s) => {
    if (s.kind === "finished" && s.runId === runId) poke?.();
  });
  const onAbort = () => poke?.();
  signal?.addEventListener("abort", onAbort, { once: true });
  try {
    for (;;) {
      if (signal?.aborted) throw signal.reason instanceof Error ? signal.reason : new Error(`wait for run ${runId} was aborted`);
      let output: AgentOutput | undefined;
      try {
        output = await read();
      } catch (error) {
        // The database is away (restarting, failing over): keep waiting; anything else is the caller's.
        if (!(error instanceof RunQueueError && error.problem === "connection")) throw error;
      }
      if (output) return output;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, pollMs);
        poke = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      poke = undefined;
    }
  } finally {
    unsubscribe();
    signal?.removeEventListener("abort", onAbort);
  }
}
