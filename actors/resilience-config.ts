import { z } from "zod";
import { modelApiFields } from "./model-api.js";

/** Another model and/or endpoint tried, in order, once the primary has failed for good. */
export const FallbackSchema = z
  .object({
    model: z.string().min(1).optional(),
    baseURL: z.url().optional(),
    /** A key given in code. Prefer `apiKeyEnv` in files: keys do not belong in config files. */
    apiKey: z.string().min(1).optional(),
    /** Name of the environment variable that holds this endpoint's key. */
    apiKeyEnv: z.string().min(1).optional(),
    ...modelApiFields(),
  })
  .strict();
export type Fallback = z.infer<typeof FallbackSchema>;

export const RETRYABLE = ["rate_limit", "server_error", "timeout", "connection"] as const;
export type RetryableFailure = (typeof RETRYABLE)[number];

/** How one logical model call survives transient failures. */
export const ResilienceSchema = z
  .object({
    /** Retries per endpoint after the first attempt. */
    maxRetries: z.number().int().min(0).max(20).default(2),
    initialDelayMs: z.number().min(0).default(500),
    maxDelayMs: z.number().min(0).default(10_000),
    backoffMultiplier: z.number().min(1).default(2),
    /** Fraction of each delay that is randomized (0 = none, 1 = full jitter). */
    jitter: z.number().min(0).max(1).default(0.25),
    /** Which failures are retried; any other error goes straight to the next fallback. */
    retryOn: z.array(z.enum(RETRYABLE)).default([...RETRYABLE]),
    fallbacks: z.array(FallbackSchema).default([]),
    /**
     * Once a fallback has answered, the run's later calls start at it instead of the failing primary
     * (the choice is kept in the run's context, so it survives a restore). Default true; false: every
     * call starts at the primary again.
     */
    sticky: z.boolean().optional(),
  })
  .strict();
export type Resilience = z.output<typeof ResilienceSchema>;
export type ResilienceInput = z.input<typeof ResilienceSchema>;

/**
 * The policy as it may be written down (into an actor's persisted input, hence every snapshot and
 * checkpoint): fallbacks keep their model, base URL without query or credentials, and the name of
 * their key variable, never a key. The live policy, keys included, stays with the LLM actor.
 */
export function resilienceWithoutKeys(policy: Resilience): Resilience {
  if (policy.fallbacks.every((f) => f.apiKey === undefined && (f.baseURL === undefined || !hasUrlSecrets(f.baseURL)))) return policy;
  return {
    ...policy,
    fallbacks: policy.fallbacks.map(({ apiKey: _key, ...fallback }) => (fallback.baseURL !== undefined && hasUrlSecrets(fallback.baseURL) ? { ...fallback, baseURL: withoutUrlSecrets(fallback.baseURL) } : fallback)),
  };
}

function hasUrlSecrets(baseURL: string): boolean {
  try {
    const url = new URL(baseURL);
    return url.username !== "" || url.password !== "" || url.search !== "" || url.hash !== "";
  } catch {
    return false;
  }
}

function withoutUrlSecrets(baseURL: string): string {
  const url = new URL(baseURL);
  url.username = "";
  url.password = "";
  url.search = "";
  url.hash = "";
  return url.toString();
}
