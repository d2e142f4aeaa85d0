import { isPlainObject, type Plain } from "./plain.js";

/**
 * Snapshots carry the whole machine context, conversation included, on every step. A recording
 * stores the first context whole and then only what changed: appended array items (the message
 * history grows by `push`), replaced values (`set`) and removed keys (`del`). XState contexts are
 * immutable with structural sharing, so unchanged parts are the same objects and cost nothing to skip.
 */
export type PathKey = string | number;

export type DiffOp =
  | { op: "set"; path: PathKey[]; value: unknown }
  | { op: "push"; path: PathKey[]; items: unknown[] }
  | { op: "del"; path: PathKey[] };

function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((item, i) => deepEqual(item, b[i]));
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  return ka.length === kb.length && ka.every((k) => Object.hasOwn(b, k) && deepEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The operations that turn `prev` into `next` (an empty list when they are equal). */
export function diffValues(prev: unknown, next: unknown, path: PathKey[] = []): DiffOp[] {
  if (prev === next) return [];
  if (Array.isArray(prev) && Array.isArray(next)) {
    if (next.length >= prev.length && prev.every((item, i) => item === next[i] || deepEqual(item, next[i]))) {
      return next.length > prev.length ? [{ op: "push", path, items: next.slice(prev.length) }] : [];
    }
    return deepEqual(prev, next) ? [] : [{ op: "set", path, value: next }];
  }
  if (isRecord(prev) && isRecord(next)) {
    const ops: DiffOp[] = [];
    for (const key of Object.keys(prev)) if (!Object.hasOwn(next, key) || next[key] === undefined) if (prev[key] !== undefined) ops.push({ op: "del", path: [...path, key] });
    for (const [key, value] of Object.entries(next)) {
      if (value === undefined) continue;
      if (!Object.hasOwn(prev, key) || prev[key] === undefined) ops.push({ op: "set", path: [...path, key], value });
      else ops.push(...diffValues(prev[key], value, [...path, key]));
    }
    return ops;
  }
  return deepEqual(prev, next) ? [] : [{ op: "set", path, value: next }];
}

/** Apply operations to a plain value, returning the new value (the input is not modified). */
export function applyDiff(base: Plain | undefined, ops: readonly DiffOp[]): Plain | undefined {
  let root: Plain | undefined = base;
  for (const op of ops) root = applyOne(root, op, 0);
  return root;
}

function applyOne(node: Plain | undefined, op: DiffOp, depth: number): Plain | undefined {
  if (depth === op.path.length) {
    if (op.op === "set") return op.value as Plain;
    if (op.op === "push") return [...(Array.isArray(node) ? node : []), ...(op.items as Plain[])];
    return undefined;
  }
  const key = op.path[depth]!;
  if (Array.isArray(node) && typeof key === "number") {
    const copy = [...node];
    const child = applyOne(copy[key], op, depth + 1);
    copy[key] = child === undefined ? null : child;
    return copy;
  }
  const record: { [key: string]: Plain } = isPlainObject(node) ? { ...node } : {};
  const child = applyOne(record[String(key)], op, depth + 1);
  if (child === undefined) delete record[String(key)];
  else record[String(key)] = child;
  return record;
}
