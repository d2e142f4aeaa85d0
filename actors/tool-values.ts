/*
 * What a tool hands back, as text, whatever it is. Tools are user code: they return cycles,
 * BigInts, Maps, objects whose getters or `toJSON` throw, and they throw things that are not
 * Errors (a plain object, a Symbol, `undefined`, an object whose `toString` throws). None of that
 * may end the run or reach the model as "[object Object]": each becomes readable text, and nothing
 * here throws.
 */

/** Nesting below this is cut: a deep result is as useless to the model as it is costly to encode. */
const MAX_DEPTH = 64;

/** The result as the model reads it: JSON for structured values, the text itself for a string. */
export interface RenderedValue {
  text: string;
  /** Set when the value could not be turned into anything useful (its own `toJSON` threw, ...). */
  problem?: string;
}

/** `value` as text for the model. Never throws. */
export function renderValue(value: unknown): string {
  return renderResult(value).text;
}

/** Like `renderValue`, but says when nothing useful could be made of the value. */
export function renderResult(value: unknown): RenderedValue {
  if (typeof value === "string") return { text: value };
  if (value === undefined) return { text: "" };
  try {
    // The fast path: most results are plain JSON. JSON.stringify turns a Map or Set into "{}"
    // without a word, so only a text holding "{}" is looked at again, with a replacer (called on
    // every value, hence not on the common path) that sends one to the walk below.
    let text = JSON.stringify(value);
    if (text !== undefined && text.includes("{}")) text = JSON.stringify(value, refuseCollections);
    if (text !== undefined) return { text };
  } catch {
    // Cycles, BigInt, throwing getters, collections: the walk below copes with each.
  }
  try {
    const encoded = toJsonSafe(value, [], 0);
    return { text: JSON.stringify(encoded) ?? String(encoded) };
  } catch (error) {
    return { text: "", problem: `the result could not be turned into text (${thrownMessage(error)})` };
  }
}

function refuseCollections(_key: string, value: unknown): unknown {
  if (value instanceof Map || value instanceof Set) throw new TypeError("a Map or Set");
  return value;
}

/**
 * A plain JSON copy of `value`. Cycles become "[circular reference]", BigInt its digits, Map an
 * object (or a list of pairs when keys are not strings), Set a list, a throwing getter or toJSON a
 * note saying so. Only the top level may throw (a Proxy whose every trap throws).
 */
function toJsonSafe(value: unknown, ancestors: object[], depth: number): unknown {
  switch (typeof value) {
    case "string":
    case "boolean":
      return value;
    case "number":
      return Number.isFinite(value) ? value : String(value);
    case "bigint":
      return value.toString();
    case "symbol":
      return value.toString();
    case "function":
      return `[function ${value.name || "anonymous"}]`;
    case "undefined":
      return null;
  }
  if (value === null) return null;
  const object = value as object;
  if (ancestors.includes(object)) return "[circular reference]";
  if (depth >= MAX_DEPTH) return "[nested too deep]";
  const inner = [...ancestors, object];
  const toJSON = read(object, "toJSON");
  if (typeof toJSON === "function") {
    let replaced: unknown;
    try {
      replaced = (toJSON as (key: string) => unknown).call(object, "");
    } catch (error) {
      if (depth === 0) throw error;
      return `[toJSON threw: ${thrownMessage(error)}]`;
    }
    return toJsonSafe(replaced, inner, depth + 1);
  }
  if (object instanceof Map) {
    const entries = [...object.entries()];
    if (entries.every(([key]) => typeof key === "string")) {
      return Object.fromEntries(entries.map(([key, item]) => [key, toJsonSafe(item, inner, depth + 1)]));
    }
    return entries.map(([key, item]) => [toJsonSafe(key, inner, depth + 1), toJsonSafe(item, inner, depth + 1)]);
  }
  if (object instanceof Set) return [...object].map((item) => toJsonSafe(item, inner, depth + 1));
  if (Array.isArray(object)) return object.map((_, index) => toJsonSafe(read(object, index), inner, depth + 1));
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(object)) out[key] = toJsonSafe(read(object, key), inner, depth + 1);
  return out;
}

/** One property, or a note when reading it throws (a getter, a Proxy trap). */
function read(object: object, key: PropertyKey): unknown {
  try {
    return (object as Record<PropertyKey, unknown>)[key];
  } catch (error) {
    return `[reading ${String(key)} threw: ${thrownMessage(error)}]`;
  }
}

/**
 * What a tool threw, as a message. An Error gives its message; a plain object its `message`
 * field; anything else a description of the value. Never throws, whatever was thrown.
 */
export function thrownMessage(error: unknown): string {
  try {
    if (error === undefined) return "it threw undefined (no error value)";
    if (error === null) return "it threw null (no error value)";
    if (typeof error === "string") return error === "" ? "it threw an empty string" : error;
    if (typeof error === "symbol") return `it threw ${error.toString()}`;
    if (typeof error !== "object" && typeof error !== "function") return String(error);
    const message = read(error, "message");
    if (typeof message === "string" && message !== "") return message;
    if (error instanceof Error) return read(error, "name") === "Error" ? "an Error without a message" : `${String(read(error, "name"))} without a message`;
    const rendered = renderResult(error);
    if (rendered.problem === undefined && rendered.text !== "" && rendered.text !== "{}") return `it threw ${truncate(rendered.text)}`;
    return "it threw an object without a message";
  } catch {
    return "it threw a value that cannot be read";
  }
}

function truncate(text: string): string {
  return text.length > 500 ? `${text.slice(0, 500)}...` : text;
}
