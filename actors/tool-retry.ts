import type { Tool } from "../tools/tool.js";

/**
 * Retries of a tool that asks for them (`defineTool({ idempotent: true, retries })`): a call that
 * threw or timed out runs again after a wait, doubled each time, while the batch is not stopped.
 * All attempts are one call: one `tool.call.started`, one journal entry, one outcome (the last
 * attempt's); each failure before the last is a `tool.call.retrying`.
 */

/** The wait before the first retry when the tool names none. */
const DEFAULT_DELAY_MS = 250;
/** No wait between attempts is longer than this, however many came before. */
const MAX_DELAY_MS = 30_000;

/** How long to wait after failed attempt `attempt` (1-based) of a call of `tool`. */
export function retryDelayMs(tool: Pick<Tool, "retryDelayMs">, attempt: number): number {
  return Math.min((tool.retryDelayMs ?? DEFAULT_DELAY_MS) * 2 ** (attempt - 1), MAX_DELAY_MS);
}

export interface RetryHooks {
  /** Rejects (with the abort's reason) when the batch is stopped: a wait ends there. */
  stopped: Promise<never>;
  aborted(): boolean;
  /** Attempt `attempt` failed with `error` and the call runs again after `delayMs`. */
  retrying(attempt: number, error: unknown, delayMs: number): void;
}

/** Run `attempt` until it returns, `tool.retries` are spent (the last error is thrown), or the batch stops. */
export async function withRetries<T>(tool: Pick<Tool, "retries" | "retryDelayMs">, attempt: (n: number) => Promise<T>, hooks: RetryHooks): Promise<T> {
  const attempts = (tool.retries ?? 0) + 1;
  for (let n = 1; ; n++) {
    try {
      return await attempt(n);
    } catch (error) {
      if (n >= attempts || hooks.aborted()) throw error;
      const delayMs = retryDelayMs(tool, n);
      hooks.retrying(n, error, delayMs);
      await pause(delayMs, hooks.stopped);
    }
  }
}

/** Waits `ms`, or rejects as soon as `stopped` does (its timer cleared either way). */
async function pause(ms: number, stopped: Promise<never>): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    await Promise.race([new Promise<void>((resolve) => (timer = setTimeout(resolve, ms))), stopped]);
  } finally {
    clearTimeout(timer);
  }
}
