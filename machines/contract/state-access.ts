import { z } from "zod";
import { fieldMeta, REACT_FIELDS, type Lifetime, type ReActField, type StateKeys, type StateSchema } from "./state.js";
import { JianmuError } from "../../tools/jianmu-error.js";

/** The host state an agent reads and writes: plain JSON, possibly shared with other agents. */
export type HostState = Record<string, unknown>;

/** Input state that does not fit the state schema or is not plain JSON. */
export class StateError extends JianmuError {
  static override readonly errorCode = "STATE_ERROR";
  override name = "StateError";
  constructor(
    readonly field: string,
    problem: string,
  ) {
    super(`state.${field}: ${problem}`);
  }
}

/**
 * Reads and writes the agent's fields inside a host state, honouring `namespace` (everything
 * under `state[namespace]`) and `config.keys` (a ReAct field stored under another, maybe dotted,
 * name). Writes never mutate: they return a new host object sharing everything untouched.
 */
export class StateAccess {
  private readonly paths: ReadonlyMap<string, readonly string[]>;
  /**
   * Each field's key, when every field sits at the top level of the host state (no namespace, no
   * dotted key): the common case, where reads and writes skip walking paths (they run several times
   * a round).
   */
  private readonly topKeys: ReadonlyMap<string, string> | undefined;
  readonly fields: readonly string[];
  /**
   * Each resettable lifetime's fields and their defaults: a primitive as it is, an object or array as
   * JSON text, parsed afresh on every reset so no two runs share an object.
   */
  private readonly defaults = new Map<Exclude<Lifetime, "persistent">, { field: string; value?: unknown; json?: string }[]>();

  constructor(
    readonly schema: StateSchema,
    readonly namespace: string | undefined,
    keys: StateKeys,
  ) {
    this.fields = Object.keys(schema.shape);
    const reactFields = new Set<string>(REACT_FIELDS);
    this.paths = new Map(
      this.fields.map((field) => {
        const key = reactFields.has(field) ? (keys[field as ReActField] ?? field) : field;
        const path = key.split(".");
        return [field, namespace ? [namespace, ...path] : path];
      }),
    );
    const paths = [...this.paths];
    this.topKeys = paths.every(([, path]) => path.length === 1) ? new Map(paths.map(([field, path]) => [field, path[0]!])) : undefined;
    for (const lifetime of ["run", "step"] as const) {
      const fields = this.fields.filter((field) => fieldMeta(schema.shape[field] as z.ZodType).lifetime === lifetime);
      this.defaults.set(
        lifetime,
        fields.map((field) => {
          const value = defaultOf(schema.shape[field] as z.ZodType);
          return value !== null && typeof value === "object" ? { field, json: JSON.stringify(value) } : { field, value };
        }),
      );
    }
  }

  /** The host-state path of a field, e.g. `["agentA", "llm", "usage"]`. */
  pathOf(field: string): readonly string[] {
    const path = this.paths.get(field);
    if (!path) throw new StateError(field, "is not a field of this agent's state schema");
    return path;
  }

  read<T = unknown>(host: HostState, field: string): T {
    const key = this.topKeys?.get(field);
    return (key !== undefined ? host[key] : getPath(host, this.pathOf(field))) as T;
  }

  write(host: HostState, updates: Record<string, unknown>): HostState {
    // The common case, every field written at the top level (always so without a namespace or a dotted key): one copy of the host, not one per field.
    if (this.topKeys || Object.keys(updates).every((field) => this.pathOf(field).length === 1)) {
      const next: HostState = { ...host };
      for (const field in updates) {
        const key = this.topKeys?.get(field) ?? this.pathOf(field)[0]!;
        const value = updates[field];
        if (value === undefined) delete next[key];
        else next[key] = value;
      }
      return next;
    }
    let next = host;
    for (const field of Object.keys(updates)) next = setPath(next, this.pathOf(field), updates[field]);
    return next;
  }

  /** The append reducer: add items to the end of a list field. */
  append(host: HostState, field: string, items: readonly unknown[]): HostState {
    if (items.length === 0) return host;
    const current = this.read<unknown[] | undefined>(host, field) ?? [];
    const key = this.topKeys?.get(field);
    if (key !== undefined) return { ...host, [key]: [...current, ...items] };
    return setPath(host, this.pathOf(field), [...current, ...items]);
  }

  /** The agent's fields as the schema names them. */
  view(host: HostState): Record<string, unknown> {
    // A plain loop: this runs for every invoked actor, and building entry pairs first costs more.
    const out: Record<string, unknown> = {};
    if (this.topKeys) for (const [field, key] of this.topKeys) out[field] = host[key];
    else for (const field of this.fields) out[field] = this.read(host, field);
    return out;
  }

  /** Set every field of the given lifetime back to its schema default. */
  reset(host: HostState, lifetime: Exclude<Lifetime, "persistent">): HostState {
    const updates: Record<string, unknown> = {};
    for (const { field, value, json } of this.defaults.get(lifetime) ?? []) updates[field] = json === undefined ? value : JSON.parse(json);
    return this.write(host, updates);
  }

  /**
   * Validate an input host state and fill every missing agent field with its default.
   * Errors name the host-state path of the offending field.
   */
  normalize(input: HostState): HostState {
    assertJson(input, "");
    const parsed = this.schema.safeParse(this.view(input));
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      const [field, ...rest] = issue.path.map(String);
      const where = [...this.pathOf(field ?? ""), ...rest].join(".");
      throw new StateError(where, `${issue.message} (fix the value you pass in input.state or input.messages)`);
    }
    return this.write(input, parsed.data as Record<string, unknown>);
  }
}

function defaultOf(schema: z.ZodType): unknown {
  const parsed = schema.safeParse(undefined);
  return parsed.success ? parsed.data : undefined;
}

function getPath(host: HostState, path: readonly string[]): unknown {
  let node: unknown = host;
  for (const key of path) {
    if (node === null || typeof node !== "object") return undefined;
    node = (node as Record<string, unknown>)[key];
  }
  return node;
}

function setPath(host: HostState, path: readonly string[], value: unknown): HostState {
  const [head, ...rest] = path;
  if (head === undefined) return host;
  const copy: HostState = { ...host };
  if (rest.length === 0) {
    if (value === undefined) delete copy[head];
    else copy[head] = value;
    return copy;
  }
  const child = host[head];
  copy[head] = setPath(child !== null && typeof child === "object" && !Array.isArray(child) ? (child as HostState) : {}, rest, value);
  return copy;
}

/** Context is persisted as JSON: refuse anything JSON would silently drop or mangle. */
function assertJson(value: unknown, path: string): void {
  if (value === null || typeof value === "string" || typeof value === "boolean") return;
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new StateError(path || "(root)", `is ${value}; only finite numbers survive JSON`);
    return;
  }
  if (Array.isArray(value)) {
    value.forEach((item, index) => assertJson(item, `${path}[${index}]`));
    return;
  }
  if (typeof value === "object") {
    const proto = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null) {
      throw new StateError(path || "(root)", `is a ${proto?.constructor?.name ?? "non-plain"} object; state must be plain JSON (it is persisted)`);
    }
    for (const [key, item] of Object.entries(value)) {
      if (item !== undefined) assertJson(item, path ? `${path}.${key}` : key);
    }
    return;
  }
  throw new StateError(path || "(root)", `is a ${typeof value}; state must be plain JSON (it is persisted)`);
}
