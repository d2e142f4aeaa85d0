/*
 * Limits on a saved run before anything recursive touches it. A tampered or hostile checkpoint
 * nested 100 000 levels deep restores "fine" and then overflows the stack later, in the middle of
 * the run (the next checkpoint's JSON.stringify, structuredClone, zod); one with huge strings
 * eats the memory of every process that loads it. Both are refused up front, by a walk that does
 * not recurse itself.
 *
 * The same limits, with room for what a checkpoint adds, bound what a run may start with (queue
 * submits, `POST /runs`): an input accepted there always restores, instead of failing at its first
 * restore (a parked run's approval), and no one input can grow checkpoints past what a worker
 * writes between two lease renewals.
 */

export interface SnapshotLimits {
  /** Deepest nesting of objects and arrays in the saved record. */
  maxDepth: number;
  /** Largest size, in characters of JSON text (estimated for an object: the strings and keys it holds). */
  maxChars: number;
}

/**
 * Generous for real runs (a context is a few levels of loop bookkeeping plus the host state; a long
 * conversation is megabytes), far below what breaks the process.
 */
export const DEFAULT_SNAPSHOT_LIMITS: SnapshotLimits = Object.freeze({ maxDepth: 500, maxChars: 256 * 1024 * 1024 });

/**
 * Levels a checkpoint puts above a run's input (record → snapshot → context → state is 4 today),
 * with room for nested agents and later snapshot formats.
 */
export const CHECKPOINT_DEPTH_ABOVE_INPUT = 50;

/**
 * What a run may start with: nested at most as deep as a checkpoint of it can be restored, and at
 * most 16 Mi characters of JSON (about 4 million tokens, beyond any model's context window; a
 * checkpoint holds the input more than once, and a worker must write it well inside its lease).
 */
export const DEFAULT_INPUT_LIMITS: SnapshotLimits = Object.freeze({
  maxDepth: DEFAULT_SNAPSHOT_LIMITS.maxDepth - CHECKPOINT_DEPTH_ABOVE_INPUT,
  maxChars: 16 * 1024 * 1024,
});

/** What breaks a limit, and where (the path of the first two levels, e.g. `state.profile`). */
export interface LimitProblem {
  path: string;
  problem: string;
}

/** What breaks a limit, as text for the error; undefined when the value is within them. */
export function snapshotLimitProblem(value: unknown, limits: SnapshotLimits = DEFAULT_SNAPSHOT_LIMITS): string | undefined {
  return walkLimits(value, limits)?.problem;
}

/**
 * A run's input checked against `DEFAULT_INPUT_LIMITS` (or others), and for what JSON cannot hold
 * (a BigInt, an object that contains itself), before anything recursive (zod, JSON.stringify) sees it.
 */
export function inputLimitProblem(input: unknown, limits: SnapshotLimits = DEFAULT_INPUT_LIMITS): LimitProblem | undefined {
  return walkLimits(input, limits, true);
}

/** One walk for both: depth, size, and (for inputs) what JSON cannot encode. It does not recurse. */
function walkLimits(value: unknown, limits: SnapshotLimits, strictJson = false): LimitProblem | undefined {
  if (typeof value === "string") {
    return value.length > limits.maxChars ? { path: "", problem: `it is ${value.length} characters long, over the limit of ${limits.maxChars}` } : undefined;
  }
  let chars = 0;
  const seen = strictJson ? new WeakSet<object>() : undefined;
  const stack: { value: unknown; depth: number; path: string }[] = [{ value, depth: 0, path: "" }];
  const below = (path: string, key: string, depth: number) => (depth < 2 ? (path ? `${path}.${key}` : key) : path);
  while (stack.length > 0) {
    const { value: node, depth, path } = stack.pop()!;
    if (typeof node === "string") {
      chars += node.length + 2;
    } else if (node !== null && typeof node === "object") {
      if (depth >= limits.maxDepth) return { path, problem: `it is nested more than ${limits.maxDepth} levels deep` };
      if (seen) {
        if (seen.has(node)) return { path, problem: "it contains the same object twice (or itself): JSON would repeat or refuse it" };
        seen.add(node);
      }
      chars += 2;
      if (Array.isArray(node)) {
        node.forEach((item, index) => stack.push({ value: item, depth: depth + 1, path: below(path, String(index), depth) }));
      } else {
        for (const key of Object.keys(node)) {
          chars += key.length + 4;
          stack.push({ value: (node as Record<string, unknown>)[key], depth: depth + 1, path: below(path, key, depth) });
        }
      }
    } else if (strictJson && typeof node === "bigint") {
      return { path, problem: "it is a BigInt, which JSON cannot hold (pass it as a string or a number)" };
    } else {
      chars += 8;
    }
    if (chars > limits.maxChars) return { path, problem: `it holds more than ${limits.maxChars} characters of JSON` };
  }
  return undefined;
}
