import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { resolve } from "node:path";
import { z } from "zod";
import { PricingSchema } from "../../actors/pricing.js";
import { FallbackSchema, ResilienceSchema } from "../../actors/resilience-config.js";
import { modelApiFields } from "../../actors/model-api.js";
import { StateKeysSchema } from "./state.js";
import { ConfigError } from "./config-error.js";
import { FileForm, type FileLocation } from "./config-file-form.js";

export { ConfigError } from "./config-error.js";

export const ToolChoiceSchema = z.union([
  z.enum(["auto", "none", "required"]),
  z.object({ type: z.literal("function"), function: z.object({ name: z.string().min(1) }).strict() }).strict(),
]);

/** How a batch of tool calls runs: one after another, all at once, or parallel when every tool allows it. */
export const ToolExecutionSchema = z.enum(["serial", "parallel", "auto"]);

/** How a structured final output is asked for: a final-result tool, the provider's json_schema, or chosen by model. */
export const OutputStrategySchema = z.enum(["tool", "native", "auto"]);

/** How many invalid final outputs go back to the model before the run fails. */
export const OutputRetriesSchema = z.number().int().min(0).max(100);

/** Keeping the prompt under a token limit: drop old messages, or have the model summarize them. */
export const ContextLimitSchema = z
  .object({
    /** Compact before a model call whose prompt would be longer than this (counted with gpt-tokenizer). */
    maxTokens: z.number().int().min(1),
    strategy: z.enum(["trim", "summarize"]).default("trim"),
    /** The most recent messages that are never compacted (a tool call and its results stay together). */
    keepLast: z.number().int().min(0).default(4),
  })
  .strict();

/** The ReAct loop's settings (contract section 3). Every field is optional in input; defaults come from here. */
export const ReActConfig = z
  .object({
    model: z.string().min(1).optional(),
    temperature: z.number().min(0).max(2).optional(),
    maxTokens: z.number().int().positive().optional(),
    topP: z.number().min(0).max(1).optional(),
    topK: z.number().int().positive().optional(),
    /** Seconds one model call (one HTTP attempt) may take. */
    timeout: z.number().positive().optional(),
    /**
     * Total tokens for the whole run, nested agents, summaries and every attempt included; unset =
     * unlimited. Each model call's maxTokens is capped to what is left after its prompt, and a call
     * whose prompt alone would not fit is not made (the run fails: tokenBudget).
     */
    maxBudgetTokens: z.number().int().positive().optional(),
    /** The most the run may cost, in the currency units of `pricing` (needs it); held like `maxBudgetTokens` (costBudget). */
    maxBudgetCost: z.number().positive().optional(),
    /** Prices per model in currency units per million tokens: `{ "gpt-4o-mini": { input: 0.15, output: 0.6, cachedInput: 0.075 } }`. Gives `usage.cost`. */
    pricing: PricingSchema.optional(),
    /** Wall-clock limit of a run from its start, in ms; kept as an absolute deadline, so a restored run keeps it (deadline). */
    maxDurationMs: z.number().int().positive().optional(),
    maxIterations: z.number().int().min(1).max(10_000).default(10),
    /** Retries and fallbacks; when unset the model client's own settings apply. */
    resilience: ResilienceSchema.optional(),
    /** Replaces the default persona (ignored when a `contextBuilder` is given). */
    systemPrompt: z.string().optional(),
    /** Sent only on the first round of each run, including that round's retries and fallbacks. */
    toolChoice: ToolChoiceSchema.optional(),
    /** Merged into the API request body; `toolChoice`/`tool_choice` here obey the first-round rule too. */
    extraParams: z.record(z.string(), z.unknown()).default({}),
    keys: StateKeysSchema.default({}),
    toolExecution: ToolExecutionSchema.default("auto"),
    /** Tool outputs longer than this are cut, with a marker, so one tool cannot blow the context. */
    maxToolOutputChars: z.number().int().min(100).default(20_000),
    /** With `createReactMachine({ output })`: how the model is asked for it ("auto": native for models known to support json_schema). */
    outputStrategy: OutputStrategySchema.default("auto"),
    /** With `output`: how many invalid final outputs go back to the model before the run fails with `invalidOutput`. */
    outputRetries: OutputRetriesSchema.default(2),
    /** Compaction of long conversations; unset = the history grows without limit. */
    context: ContextLimitSchema.optional(),
  })
  .strict();
export type ReActConfig = z.output<typeof ReActConfig>;
export type ReActConfigInput = z.input<typeof ReActConfig>;
export type ContextLimit = z.output<typeof ContextLimitSchema>;
export type OutputStrategy = z.infer<typeof OutputStrategySchema>;

/**
 * Settings of the model endpoint, which is built outside the loop (the CLI reads them; in code they
 * are `resolveModelClient` options): not part of ReActConfig, but part of the one config.
 */
export const EndpointConfigSchema = z
  .object({
    /** The OpenAI-compatible endpoint (the CLI: after --base-url and $OPENAI_BASE_URL). */
    baseURL: FallbackSchema.shape.baseURL,
    /** The environment variable that holds the endpoint's key (default OPENAI_API_KEY). */
    apiKeyEnv: FallbackSchema.shape.apiKeyEnv,
    /** Stream responses (default true). */
    stream: z.boolean().optional(),
    /** Which API the endpoint is spoken to with ("chat" or "responses"), a reasoning model's settings, and whether the Responses API stores replies. */
    ...modelApiFields(),
  })
  .strict();

/** The one config: every setting `jianmu.yaml` can hold, by its name in code. The file form is derived from it. */
export const JianmuConfigSchema = ReActConfig.extend(EndpointConfigSchema.shape).strict();
type JianmuField = keyof z.input<typeof JianmuConfigSchema> & string;

/**
 * Where each setting lives in `jianmu.yaml` (snake-case sections as in the original design). Typed
 * over every field of the schema, so a new field cannot be left without a place in the file.
 */
const FILE_LOCATIONS = {
  model: "models.react",
  temperature: "llm.*",
  maxTokens: "llm.*",
  topP: "llm.*",
  topK: "llm.*",
  timeout: "llm.*",
  maxBudgetTokens: "llm.*",
  maxBudgetCost: "llm.*",
  maxIterations: "limits.*",
  maxDurationMs: "limits.*",
  pricing: "*",
  resilience: "*",
  systemPrompt: "react.*",
  toolChoice: "react.*",
  extraParams: "react.*",
  keys: "react.*",
  toolExecution: "react.*",
  maxToolOutputChars: "react.*",
  outputStrategy: "react.*",
  outputRetries: "react.*",
  context: "*",
  baseURL: "llm.*",
  apiKeyEnv: "llm.*",
  stream: "llm.*",
  api: "llm.*",
  reasoning: "llm.*",
  store: "llm.*",
} as const satisfies Record<JianmuField, FileLocation>;

/** The `jianmu.yaml` form of `JianmuConfigSchema`. */
export const CONFIG_FILE = new FileForm<JianmuField>({
  schema: JianmuConfigSchema,
  locations: FILE_LOCATIONS,
  // Their keys are names (API parameters, state fields, a tool), not settings: written as they are.
  verbatim: ["extraParams", "keys", "toolChoice"],
  removed: {
    maxRounds: { location: "limits.*", use: "maxIterations", why: "the loop has one limit, counted in iterations; max_rounds was never enforced" },
    defaultModel: { location: "models.default", use: "model", why: "the ReAct loop never read it" },
  },
  codeOnly: { "resilience.fallbacks.apiKey": "keys do not belong in config files: name the variable that holds it with api_key_env" },
});

/** What a `jianmu.yaml` sets (only those fields), by their names in code. */
export type JianmuFile = z.input<typeof JianmuConfigSchema>;

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let node = root;
  for (const key of path) {
    if (node === null || typeof node !== "object") return undefined;
    node = (node as Record<PropertyKey, unknown>)[key];
  }
  return node;
}

/**
 * Turn zod's issues into one ConfigError naming each field as the user wrote it (`name` spells a
 * path): the first problem, then the others (a field left out and another mistyped are both said).
 */
function toConfigError(error: z.ZodError, input: unknown, source: string, name: (path: readonly PropertyKey[]) => string): ConfigError {
  const [first, ...others] = error.issues.slice(0, 3).map((issue) => issueError(issue, input, source, name));
  if (others.length > 0) first!.message = [first!.message, ...others.map((other) => other.message.slice(source.length + 2))].join("; and ");
  return first!;
}

function issueError(issue: z.core.$ZodIssue, input: unknown, source: string, name: (path: readonly PropertyKey[]) => string): ConfigError {
  if (issue.code === "unrecognized_keys") {
    const path = [...issue.path, issue.keys[0]!];
    const value = valueAt(input, path);
    if (issue.path.length === 0) {
      const removed = CONFIG_FILE.removedInCode(issue.keys[0]!, value, source);
      if (removed) return removed;
    }
    return new ConfigError(name(path), value, source, "unknown field; remove it or check its spelling");
  }
  const value = valueAt(input, issue.path);
  const error = new ConfigError(name(issue.path), value, source, issue.message);
  // Left out, not mistyped: say that it is needed (and, inside a block, that the block asks for it).
  if (value === undefined && issue.code === "invalid_type") {
    const block = issue.path.length > 1 ? ` when ${name(issue.path.slice(0, -1))} is set` : "";
    error.message = `${source}: ${name(issue.path)} is required${block}`;
  }
  return error;
}

const codeName = (path: readonly PropertyKey[]) => path.map(String).join(".") || "(root)";

export interface LoadConfigOptions {
  /** Path of the YAML file; defaults to `$JIANMU_CONFIG`, then `./jianmu.yaml` when it exists. `false`: read no file. */
  path?: string | false;
  cwd?: string;
  env?: Record<string, string | undefined>;
}

/** Locate and parse `jianmu.yaml`. Returns undefined when there is none (and none was asked for). */
export function readConfigFile(options: LoadConfigOptions = {}): { path: string; file: JianmuFile } | undefined {
  if (options.path === false) return undefined;
  const env = options.env ?? process.env;
  const cwd = options.cwd ?? process.cwd();
  const explicit = options.path ?? env["JIANMU_CONFIG"];
  const path = resolve(cwd, explicit ?? "jianmu.yaml");
  if (!existsSync(path)) {
    if (explicit !== undefined) throw new ConfigError("path", explicit, options.path ? "loadConfig" : "JIANMU_CONFIG", "no such file");
    return undefined;
  }
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? (error instanceof Error ? error.message : String(error));
    const unreadable = new ConfigError("(file)", undefined, path, `cannot be read (${reason})`);
    // Not a field's value: the file itself. Said plainly, with the fix.
    unreadable.message = `${path} cannot be read (${reason}): make it a readable YAML file, or point JIANMU_CONFIG at one`;
    throw unreadable;
  }
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (error) {
    const invalid = new ConfigError("(file)", undefined, path, "not valid YAML");
    // The parser's first line says what and where ("... at line 3, column 1"); its snippet of the file follows on other lines.
    invalid.message = `${path}: not valid YAML: ${(error instanceof Error ? error.message : String(error)).split("\n")[0]!.replace(/:$/, "")}`;
    throw invalid;
  }
  const file = CONFIG_FILE.toConfig(raw, path);
  const parsed = JianmuConfigSchema.safeParse(file);
  if (!parsed.success) throw toConfigError(parsed.error, file, path, (at) => CONFIG_FILE.fileName(at));
  // The values as written, not parsed: defaults are applied once, after code overrides are merged in.
  return { path, file: file as JianmuFile };
}

/**
 * The `yaml` package, loaded only when a file is read: `import "jianmu"` must not pay for it.
 * Synchronous (yaml 2 ships CommonJS), so loadConfig stays synchronous.
 */
function parseYaml(text: string): unknown {
  const yaml = createRequire(import.meta.url)("yaml") as typeof import("yaml");
  return yaml.parse(text);
}

/** Only the ReActConfig fields of a file (the endpoint's are for whoever builds the model client). */
function reactFields(file: JianmuFile): ReActConfigInput {
  return Object.fromEntries(Object.entries(file).filter(([field]) => field in ReActConfig.shape)) as ReActConfigInput;
}

function dropUndefined<T extends Record<string, unknown>>(record: T): T {
  return Object.fromEntries(Object.entries(record).filter(([, value]) => value !== undefined)) as T;
}

/**
 * Resolve a ReActConfig: fields given in `overrides` win, then `jianmu.yaml` (or `$JIANMU_CONFIG`),
 * then the built-in defaults. Invalid values raise a ConfigError naming field, value and source.
 */
export function loadConfig(overrides: ReActConfigInput = {}, options: LoadConfigOptions = {}): ReActConfig {
  const found = readConfigFile(options);
  const fileInput = found ? reactFields(found.file) : {};
  const merged = { ...fileInput, ...dropUndefined(overrides as Record<string, unknown>) };
  const parsed = ReActConfig.safeParse(merged);
  if (!parsed.success) throw toConfigError(parsed.error, merged, "config", codeName);
  return parsed.data;
}
