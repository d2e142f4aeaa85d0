import { z } from "zod";
import { ConfigError, removedFieldError } from "./config-error.js";

/**
 * The `jianmu.yaml` form of a config schema, derived from the schema itself: a field's file name is
 * its name in snake_case (`maxTokens` → `max_tokens`, `baseURL` → `base_url`), at the place its
 * location says. Nested objects are renamed the same way, key by key, so the schema stays the only
 * list of settings: a field added to it is a file setting too, with the same validation.
 */

/** `maxTokens` → `max_tokens`, `baseURL` → `base_url`, `initialDelayMs` → `initial_delay_ms`. */
export function snakeCase(name: string): string {
  return name
    .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1_$2")
    .toLowerCase();
}

/**
 * Where a field lives in the file: `"llm.*"` its snake_case name in section `llm`, `"*"` a top-level
 * section of its own, or a spelled-out `"models.react"` where the file's name is not the field's.
 */
export type FileLocation = "*" | `${string}.${string}`;

export interface RemovedField<Field extends string> {
  /** Where the field was in the file (as `FileLocation`). */
  location: FileLocation;
  /** The field that does its job now. */
  use: Field;
  why: string;
}

export interface FileFormSpec<Field extends string> {
  schema: z.ZodObject;
  locations: Readonly<Record<Field, FileLocation>>;
  /** Fields whose value is copied as written: its keys are names (state fields, API parameters), not settings. */
  verbatim: readonly Field[];
  /** Fields that no longer exist, by their old name in code. */
  removed: Readonly<Record<string, RemovedField<Field>>>;
  /** Nested settings accepted in code but never from a file (dotted names in code, no array indices), with the fix. */
  codeOnly: Readonly<Record<string, string>>;
}

type Values = Record<string, unknown>;

const isRecord = (value: unknown): value is Values => value !== null && typeof value === "object" && !Array.isArray(value);

/** The schema inside optional/default/nullable wrappers: the shape whose keys are renamed. */
function unwrap(schema: z.ZodType): z.ZodType {
  let inner = schema;
  while (inner instanceof z.ZodOptional || inner instanceof z.ZodDefault || inner instanceof z.ZodNullable) inner = inner.unwrap() as z.ZodType;
  return inner;
}

function resolveLocation(field: string, location: FileLocation): string {
  if (location === "*") return snakeCase(field);
  return location.endsWith(".*") ? `${location.slice(0, -1)}${snakeCase(field)}` : location;
}

export class FileForm<Field extends string> {
  private readonly paths = new Map<Field, string>();
  private readonly fields = new Map<string, Field>();
  private readonly sections = new Set<string>();
  private readonly removed = new Map<string, { name: string; replacement: string; why: string }>();
  private readonly verbatim: ReadonlySet<string>;

  constructor(private readonly spec: FileFormSpec<Field>) {
    for (const field of Object.keys(spec.locations) as Field[]) {
      const path = resolveLocation(field, spec.locations[field]);
      this.paths.set(field, path);
      this.fields.set(path, field);
      if (path.includes(".")) this.sections.add(path.split(".")[0]!);
    }
    for (const [name, entry] of Object.entries(spec.removed)) {
      this.removed.set(resolveLocation(name, entry.location), { name, replacement: this.pathOf(entry.use), why: entry.why });
    }
    this.verbatim = new Set(spec.verbatim);
  }

  /** The dotted file path of a top-level field: `maxIterations` → `limits.max_iterations`. */
  pathOf(field: Field): string {
    return this.paths.get(field)!;
  }

  /** Every setting the file can hold, as dotted paths in schema order. */
  filePaths(): string[] {
    return [...this.paths.values()];
  }

  /**
   * The file's values under their names in code (only what the file sets). Unknown and removed
   * settings are refused here, by their file name; the values themselves are left to the schema.
   */
  toConfig(raw: unknown, source: string): Values {
    if (raw === null || raw === undefined) return {};
    if (!isRecord(raw)) throw new ConfigError("(root)", raw, source, `must be a mapping of sections (${this.topLevel().join(", ")})`);
    const config: Values = {};
    for (const [key, value] of Object.entries(raw)) {
      if (!this.sections.has(key)) {
        this.take(config, key, value, source);
        continue;
      }
      if (!isRecord(value)) throw new ConfigError(key, value, source, `must be a mapping of settings (${this.inSection(key).join(", ")})`);
      for (const [name, setting] of Object.entries(value)) this.take(config, `${key}.${name}`, setting, source);
    }
    return config;
  }

  /** A path into the config (as zod reports it) in the file's names: `["resilience", "maxRetries"]` → `resilience.max_retries`. */
  fileName(path: readonly PropertyKey[]): string {
    const [field, ...rest] = path;
    if (typeof field !== "string" || !this.paths.has(field as Field)) return path.map(String).join(".") || "(root)";
    const keepNames = this.verbatim.has(field);
    return [this.pathOf(field as Field), ...rest.map((key) => (typeof key === "string" && !keepNames ? snakeCase(key) : String(key)))].join(".");
  }

  /** The error for a field code no longer has: `maxRounds` → "maxRounds was removed: use maxIterations". */
  removedInCode(name: string, value: unknown, source: string): ConfigError | undefined {
    const entry = this.spec.removed[name];
    return entry && removedFieldError(name, value, source, entry.use, entry.why);
  }

  private take(config: Values, path: string, value: unknown, source: string): void {
    const field = this.fields.get(path);
    if (field === undefined) throw this.notASetting(path, value, source);
    config[field] = this.verbatim.has(field) ? value : this.rename(value, this.spec.schema.shape[field] as z.ZodType, path, field, source);
  }

  /** Snake_case keys back to the schema's, wherever the schema has an object: in nested objects and arrays of them. */
  private rename(value: unknown, schema: z.ZodType, path: string, name: string, source: string): unknown {
    const inner = unwrap(schema);
    if (inner instanceof z.ZodArray && Array.isArray(value)) return value.map((item, index) => this.rename(item, inner.element as z.ZodType, `${path}.${index}`, name, source));
    // A record's keys are names (models in `pricing`): kept as written; its values are settings like any.
    if (inner instanceof z.ZodRecord && isRecord(value)) {
      return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, this.rename(item, inner.valueType as z.ZodType, `${path}.${key}`, name, source)]));
    }
    if (!(inner instanceof z.ZodObject) || !isRecord(value)) return value;
    const keys = new Map(Object.keys(inner.shape).map((key) => [snakeCase(key), key]));
    const renamed: Values = {};
    for (const [fileKey, item] of Object.entries(value)) {
      const here = `${path}.${fileKey}`;
      const key = keys.get(fileKey);
      if (key === undefined) throw this.unknown(here, item, source, keys.has(snakeCase(fileKey)) ? `${path}.${snakeCase(fileKey)}` : undefined);
      const fix = this.spec.codeOnly[`${name}.${key}`];
      if (fix !== undefined) throw new ConfigError(here, item, source, fix);
      renamed[key] = this.rename(item, inner.shape[key] as z.ZodType, here, `${name}.${key}`, source);
    }
    return renamed;
  }

  private notASetting(path: string, value: unknown, source: string): ConfigError {
    const removed = this.removed.get(path);
    if (removed) return removedFieldError(path, value, source, removed.replacement, removed.why);
    // A name written the way code spells it (`maxTokens`) gets its file spelling.
    const dot = path.lastIndexOf(".");
    const spelled = `${path.slice(0, dot + 1)}${snakeCase(path.slice(dot + 1))}`;
    return this.unknown(path, value, source, spelled !== path && this.fields.has(spelled) ? spelled : undefined);
  }

  private unknown(path: string, value: unknown, source: string, spelled: string | undefined): ConfigError {
    return new ConfigError(path, value, source, spelled ? `unknown field; jianmu.yaml spells it ${spelled}` : "unknown field; remove it or check its spelling");
  }

  private topLevel(): string[] {
    return [...new Set(this.filePaths().map((path) => path.split(".")[0]!))];
  }

  private inSection(section: string): string[] {
    return this.filePaths()
      .filter((path) => path.startsWith(`${section}.`))
      .map((path) => path.slice(section.length + 1));
  }
}
