/**
 * Try a statement again while the database is away for a moment (a restart, a failover, a full
 * connection pool), with backoff, until `deadline()`: a held run's writes are retried inside its
 * lease instead of giving the run up at the first dropped connection (a 2 s restart then costs 2 s,
 * not a whole lease). Retrying is safe because every such write is fenced by the run's token and
 * idempotent (see each caller).
 */
export interface RetryPolicy {
  /** Whether the error may pass on another try (the rest are thrown at once). */
  transient(error: unknown): boolean;
  /** Epoch ms after which no try starts (the lease's end as this process knows it). */
  deadline(): number;
}

const FIRST_DELAY_MS = 50;
const MAX_DELAY_MS = 2_000;

/** `attempt(n)` (n = 0, 1, ...) until it succeeds, fails for good, or the deadline leaves no time for another try. */
export async function retryWithin<T>(attempt: (n: number) => Promise<T>, policy: RetryPolicy): Promise<T> {
  let delay = FIRST_DELAY_MS;
  for (let n = 0; ; n++) {
    try {
      return await attempt(n);
    } catch (error) {
      if (!policy.transient(error)) throw error;
      // Up to half again as long, so workers that failed together do not all come back together.
      const wait = Math.round(delay * (1 + Math.random() / 2));
      if (Date.now() + wait >= policy.deadline()) throw error;
      await new Promise((resolve) => setTimeout(resolve, wait));
      delay = Math.min(delay * 2, MAX_DELAY_MS);
    }
  }
}
