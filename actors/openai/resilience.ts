import { ModelError, type ModelAttemptFailure, type ModelCallEvent, type ModelTurn } from "../model-client.js";
import { AttemptError, classifyFailure, type AttemptFailure } from "./model-failure.js";
import { RETRYABLE, type Resilience } from "../resilience-config.js";
import { redactedError } from "./redact.js";
import type { Cancellation } from "../cancellation.js";

/** Clock, randomness and waiting, injectable so tests neither sleep for real nor depend on luck. */
export interface ResilienceRuntime {
  /** Waits `ms`; rejects when `signal` aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /** A number in [0, 1), for jitter. */
  random(): number;
  /** Milliseconds, for durations. */
  now(): number;
}

/**
 * `performance.now`, looked up once: in Node the global `performance` is a lazy getter, read on
 * every use otherwise (twice per attempt, for the events' durations).
 */
export const monotonicNow: () => number = performance.now.bind(performance);

export const defaultRuntime: ResilienceRuntime = {
  sleep: abortableSleep,
  random: Math.random,
  now: monotonicNow,
};

export function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * Exponential backoff: `initialDelayMs * backoffMultiplier^retryIndex`, capped at `maxDelayMs`,
 * with the `jitter` fraction of it randomized (0 = exact, 1 = anywhere between 0 and the delay).
 */
export function backoffDelay(policy: Resilience, retryIndex: number, random: () => number): number {
  const base = Math.min(policy.maxDelayMs, policy.initialDelayMs * policy.backoffMultiplier ** retryIndex);
  return base * (1 - policy.jitter) + base * policy.jitter * random();
}

/**
 * The wait before the next try, or undefined when the server asks for longer than `maxDelayMs`:
 * then waiting would stall the agent, so the call moves on to the next fallback instead.
 */
export function retryDelay(policy: Resilience, retryIndex: number, failure: AttemptFailure, random: () => number): number | undefined {
  const backoff = backoffDelay(policy, retryIndex, random);
  if (failure.retryAfterMs === undefined) return backoff;
  if (failure.retryAfterMs > policy.maxDelayMs) return undefined;
  return Math.max(backoff, failure.retryAfterMs);
}

export function isRetryable(policy: Resilience, failure: AttemptFailure): boolean {
  if (failure.delivered) return false;
  const category = failure.category as (typeof RETRYABLE)[number];
  return RETRYABLE.includes(category) && policy.retryOn.includes(category);
}

/** One endpoint+model the call may use, in the order they are tried. */
export interface AttemptTarget {
  /** The base URL as shown in events and errors (no credentials). */
  endpoint: string;
  model: string;
}

/** What an attempt returns, as far as the events need it. */
export type AttemptResult = Pick<ModelTurn, "usage" | "finishReason">;

export interface ResilientCall<T extends AttemptTarget, R extends AttemptResult> {
  targets: readonly T[];
  policy: Resilience;
  runtime: ResilienceRuntime;
  /** The caller's cancellation (its AbortSignal, or the LLM step's cheaper stand-in). */
  cancellation?: Cancellation | undefined;
  /** The caller's listener; without one no event is built at all. */
  onEvent?: ((event: ModelCallEvent) => void) | undefined;
  /** Applied to every message that leaves the call. */
  redact: (text: string) => string;
  /** One HTTP attempt. Throws `AttemptError` (or anything `classifyFailure` understands). */
  attempt: (target: T, attempt: number) => Promise<R>;
}

/** Telemetry must not break the call: a throwing listener loses its event, nothing more. */
export function emitSafely(onEvent: (event: ModelCallEvent) => void, event: ModelCallEvent): void {
  try {
    onEvent(event);
  } catch {
    // Dropped, as said above.
  }
}

/**
 * Runs one logical call: each target gets `1 + maxRetries` attempts for retryable failures, then
 * the next target is tried. Output that already reached the caller ends the call (a retry or a
 * fallback would send it twice); so does an abort. Events report every attempt.
 */
export async function callWithResilience<T extends AttemptTarget, R extends AttemptResult>(call: ResilientCall<T, R>): Promise<R> {
  const { targets, policy, runtime, onEvent, redact } = call;
  const failures: { target: T; failure: AttemptFailure; record: ModelAttemptFailure }[] = [];
  let attemptNo = 0;
  for (let targetIndex = 0; targetIndex < targets.length; targetIndex++) {
    const target = targets[targetIndex] as T;
    const hasNextTarget = targetIndex < targets.length - 1;
    for (let retryIndex = 0; ; retryIndex++) {
      if (call.cancellation?.aborted) throw cancelled(target, failures.map((f) => f.record));
      attemptNo += 1;
      // Durations are only ever reported in events, so without a listener the clock is not read.
      const started = onEvent ? runtime.now() : 0;
      if (onEvent) emitSafely(onEvent, { type: "model.call.started", attempt: attemptNo, model: target.model, endpoint: target.endpoint });
      let failure: AttemptFailure;
      try {
        const turn = await call.attempt(target, attemptNo);
        if (onEvent) {
          emitSafely(onEvent, {
            type: "model.call.completed",
            attempt: attemptNo,
            model: target.model,
            endpoint: target.endpoint,
            usage: turn.usage,
            finishReason: turn.finishReason,
            durationMs: runtime.now() - started,
          });
        }
        return turn;
      } catch (error) {
        failure = error instanceof AttemptError ? error.failure : classifyFailure(error, { timeoutMs: 0, delivered: false });
      }
      failure = { ...failure, message: redact(failure.message) };
      const record: ModelAttemptFailure = {
        attempt: attemptNo,
        endpoint: target.endpoint,
        model: target.model,
        kind: failure.kind,
        message: failure.message,
      };
      if (failure.status !== undefined) record.status = failure.status;
      if (failure.code !== undefined) record.code = failure.code;
      failures.push({ target, failure, record });

      let delay: number | undefined;
      if (failure.category !== "aborted" && isRetryable(policy, failure) && retryIndex < policy.maxRetries) {
        delay = retryDelay(policy, retryIndex, failure, runtime.random);
      }
      const next =
        failure.category === "aborted" || failure.delivered
          ? "none"
          : delay !== undefined
            ? "retry"
            : hasNextTarget
              ? "fallback"
              : "none";
      if (onEvent) {
        const event: ModelCallEvent = {
          type: "model.call.failed",
          attempt: attemptNo,
          model: target.model,
          endpoint: target.endpoint,
          message: failure.message,
          willRetry: next !== "none",
          durationMs: runtime.now() - started,
          kind: failure.kind,
          next,
        };
        if (failure.status !== undefined) event.status = failure.status;
        if (failure.code !== undefined) event.code = failure.code;
        emitSafely(onEvent, event);
      }

      if (failure.category === "aborted") throw cancelled(target, failures.map((f) => f.record));
      if (next === "none") throw finalError(failures, policy, redact);
      if (next === "fallback") break;
      try {
        // Only a retry waits, so only a retry builds the step's real signal.
        await runtime.sleep(delay as number, call.cancellation?.signal);
      } catch {
        throw cancelled(target, failures.map((f) => f.record));
      }
    }
  }
  // Only reachable with no targets at all, which the client never builds.
  throw new ModelError("model call failed: no endpoint configured", { kind: "config" });
}

function cancelled(target: AttemptTarget, attempts: ModelAttemptFailure[]): ModelError {
  return new ModelError(`model call to ${target.endpoint} (model ${target.model}) was cancelled`, {
    kind: "aborted",
    endpoint: target.endpoint,
    model: target.model,
    attempts,
  });
}

function describeFailure(failure: AttemptFailure): string {
  const code = failure.code !== undefined && failure.code !== String(failure.status) ? ` [code ${failure.code}]` : "";
  if (failure.kind === "http" && failure.status !== undefined) return `HTTP ${failure.status}: ${failure.message}${code}`;
  // Only a server's own error event is called one: a stream that merely broke off says so itself.
  if (failure.kind === "stream" && failure.serverEvent === true) {
    const status = failure.status !== undefined ? ` (status ${failure.status})` : "";
    return `error event in the stream${status}: ${failure.message}${code}`;
  }
  return `${failure.message}${code}`;
}

function finalError(
  failures: { target: AttemptTarget; failure: AttemptFailure; record: ModelAttemptFailure }[],
  policy: Resilience,
  redact: (text: string) => string,
): ModelError {
  const last = failures[failures.length - 1] as (typeof failures)[number];
  const attempts = failures.map((f) => f.record);
  // The last failure of each endpoint+model, in the order they were tried.
  const perTarget = new Map<string, (typeof failures)[number]>();
  for (const f of failures) perTarget.set(`${f.target.endpoint}\u0000${f.target.model}`, f);
  const tries = (t: AttemptTarget) => failures.filter((f) => f.target === t).length;
  const where = (t: AttemptTarget) => `${t.endpoint} (model ${t.model})`;
  let message: string;
  if (last.failure.delivered) {
    message = `model call failed: ${where(last.target)}: the response broke off after output had reached the caller, so it was not retried: ${describeFailure(last.failure)}`;
  } else if (perTarget.size === 1) {
    const n = tries(last.target);
    message = `model call failed: ${where(last.target)}: ${describeFailure(last.failure)}${n > 1 ? ` (after ${n} attempts)` : ""}`;
  } else {
    const parts = [...perTarget.values()].map((f, i) => {
      const n = tries(f.target);
      return `${i + 1}) ${where(f.target)}: ${describeFailure(f.failure)}${n > 1 ? ` (after ${n} attempts)` : ""}`;
    });
    message = `model call failed on all ${perTarget.size} endpoints: ${parts.join("; ")}`;
  }
  const details: ConstructorParameters<typeof ModelError>[1] = {
    kind: last.failure.kind,
    endpoint: last.target.endpoint,
    model: last.target.model,
    retryable: isRetryable(policy, { ...last.failure, delivered: false }) && !last.failure.delivered,
    attempts,
    // The SDK error repeats the server's words (which may quote a key): keep a redacted copy.
    cause: redactedError(last.failure.cause, redact),
  };
  if (last.failure.status !== undefined) details.status = last.failure.status;
  if (last.failure.code !== undefined) details.code = last.failure.code;
  return new ModelError(redact(message), details);
}
