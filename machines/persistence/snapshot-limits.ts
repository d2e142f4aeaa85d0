/*
 * Limits on a saved run before anything recursive touches it. A tampered or hostile checkpoint
 * nested 100 000 levels deep restores "fine" and then overflows the stack later, in the middle of
 * the run (the next checkpoint's JSON.stringify, structuredClone, zod); one with huge strings
 * eats the memory of every process that loads it. Both are refused up front, by a walk that does
 * not recurse itself.
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

/** What breaks a limit, as text for the error; undefined when the value is within them. */
export function snapshotLimitProblem(value: unknown, limits: SnapshotLimits = DEFAULT_SNAPSHOT_LIMITS): string | undefined {
  if (typeof value === "string") {
    return value.length > limits.maxChars ? `it is ${value.length} characters long, over the limit of ${limits.maxChars}` : undefined;
  }
  let chars = 0;
  const stack: { value: unknown; depth: number }[] = [{ value, depth: 0 }];
  while (stack.length > 0) {
    const { value: node, depth } = stack.pop()!;
    if (typeof node === "string") {
      chars += node.length + 2;
    } else if (node !== null && typeof node === "object") {
      if (depth >= limits.maxDepth) return `it is nested more than ${limits.maxDepth} levels deep`;
      chars += 2;
      if (Array.isArray(node)) {
        for (const item of node) stack.push({ value: item, depth: depth + 1 });
      } else {
        for (const key of Object.keys(node)) {
          chars += key.length + 4;
          stack.push({ value: (node as Record<string, unknown>)[key], depth: depth + 1 });
        }
      }
    } else {
      chars += 8;
    }
    if (chars > limits.maxChars) return `it holds more than ${limits.maxChars} characters of JSON`;
  }
  return undefined;
}
