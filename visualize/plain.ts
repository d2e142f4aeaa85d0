/**
 * Turn anything that travels through XState inspection (snapshots with `toJSON`, actor refs,
 * Maps, errors, cyclic user data) into plain JSON data, so it can be redacted and written.
 */

export type Plain = null | boolean | number | string | Plain[] | { [key: string]: Plain };

export interface PlainOptions {
  /** Deeper values become "[depth limit]" (default 16). */
  maxDepth?: number;
  /**
   * Functions are dropped by default; "name" keeps them as `{ type: name }`, the way the Stately
   * inspector serializes guards and actions inside a machine config.
   */
  functions?: "drop" | "name";
}

export function toPlain(value: unknown, options: PlainOptions = {}): Plain {
  const maxDepth = options.maxDepth ?? 16;
  const keepFunctions = options.functions === "name";
  // Only the current path: a value shared by two branches is fine, a value containing itself is not.
  const path = new Set<object>();

  const visit = (input: unknown, depth: number): Plain | undefined => {
    if (input === null) return null;
    switch (typeof input) {
      case "string":
      case "boolean":
        return input;
      case "number":
        return Number.isFinite(input) ? input : String(input);
      case "bigint":
        return input.toString();
      case "undefined":
      case "symbol":
        return undefined;
      case "function":
        return keepFunctions ? { type: input.name || "anonymous" } : undefined;
    }
    const object = input as object;
    if (depth >= maxDepth) return "[depth limit]";
    if (path.has(object)) return "[circular]";
    path.add(object);
    try {
      if (object instanceof Error) return { name: object.name, message: object.message };
      if (object instanceof Date) return Number.isNaN(object.getTime()) ? null : object.toISOString();
      const toJSON = (object as { toJSON?: unknown }).toJSON;
      if (typeof toJSON === "function") {
        const json: unknown = toJSON.call(object);
        if (json !== object) return visit(json, depth);
      }
      if (object instanceof Map) return [...object.entries()].map(([k, v]) => [visit(k, depth + 1) ?? null, visit(v, depth + 1) ?? null]);
      if (object instanceof Set) return [...object].map((v) => visit(v, depth + 1) ?? null);
      if (Array.isArray(object)) return object.map((item) => visit(item, depth + 1) ?? null);
      if (ArrayBuffer.isView(object)) return `[${object.constructor.name} ${object.byteLength} bytes]`;
      const out: { [key: string]: Plain } = {};
      for (const [key, child] of Object.entries(object)) {
        const converted = visit(child, depth + 1);
        if (converted !== undefined) out[key] = converted;
      }
      return out;
    } finally {
      path.delete(object);
    }
  };
  return visit(value, 0) ?? null;
}

export function isPlainObject(value: unknown): value is { [key: string]: Plain } {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
