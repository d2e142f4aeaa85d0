import { storedJson } from "../machines/persistence/checkpoints/store.js";
import { AgentOutputSchema, type AgentOutput } from "../machines/contract/context.js";
import { RunQueueError } from "./errors.js";
import type { QueueSignal } from "./run-store.js";

/** A stored output (JSON text or already parsed) is checked before it is handed back: a damaged one is an error naming the run. */
function checkedOutput(stored: unknown, runId: string): AgentOutput {
  const checked = AgentOutputSchema.safeParse(storedJson(stored));
  if (checked.success) return checked.data;
  const issue = checked.error.issues[0];
  const where = issue && issue.path.length > 0 ? ` (output.${issue.path.join(".")}: ${issue.message})` : "";
  throw new RunQueueError("damaged", `wait: the stored output of run ${JSON.stringify(runId)} is damaged${where}; its checkpoint and journal are kept, inspect them or submit the run again`);
}

/**
 * Resolve with a run's output once `read` finds one: on every `finished` signal for the run and at
 * least every `pollMs` (signals can be lost). `read` rejects for an unknown run.
 */
export async function waitForOutput(
  read: () => Promise<unknown>,
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
      let output: unknown;
      try {
        output = await read();
      } catch (error) {
        // The database is away (restarting, failing over): keep waiting; anything else is the caller's.
        if (!(error instanceof RunQueueError && error.problem === "connection")) throw error;
      }
      if (output !== undefined && output !== null) return checkedOutput(output, runId);
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
