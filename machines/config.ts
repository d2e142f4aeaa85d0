import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { parse as parseYaml } from "yaml";
import { z } from "zod";
import { ResilienceSchema } from "../actors/resilience-config.js";
import { StateKeysSchema } from "./state.js";
import { JianmuError } from "../tools/jianmu-error.js";

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
    /** Total tokens for the whole run; unset = unlimited. */
    maxBudgetTokens: z.number().int().positive().optional(),
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
 * The `jianmu.yaml` file. Snake-case sections as in the original design; every field optional.
 * `llm.base_url` and `llm.stream` configure the endpoint the CLI resolves (not part of ReActConfig).
 */
const FileSchema = z
  .object({
    models: z.object({ react: z.string().min(1).optional(), default: z.string().min(1).optional() }).strict().optional(),
    llm: z
      .object({
        base_url: z.url().optional(),
        api_key_env: z.string().min(1).optional(),
        stream: z.boolean().optional(),
        temperature: z.number().min(0).max(2).optional(),
        max_tokens: z.number().int().positive().optional(),
        top_p: z.number().min(0).max(1).optional(),
        top_k: z.number().int().positive().optional(),
        timeout: z.number().positive().optional(),
        max_budget_tokens: z.number().int().positive().optional(),
      })
      .strict()
      .optional(),
    limits: z
      .object({ max_iterations: z.number().int().min(1).max(10_000).optional(), max_rounds: z.number().int().min(1).optional() })
      .strict()
      .optional(),
    react: z
      .object({
        system_prompt: z.string().optional(),
        tool_choice: ToolChoiceSchema.optional(),
        tool_execution: ToolExecutionSchema.optional(),
        max_tool_output_chars: z.number().int().min(100).optional(),
        extra_params: z.record(z.string(), z.unknown()).optional(),
        keys: StateKeysSchema.optional(),
        output_strategy: OutputStrategySchema.optional(),
        output_retries: OutputRetriesSchema.optional(),
      })
      .strict()
      .optional(),
    context: z
      .object({
        max_tokens: ContextLimitSchema.shape.maxTokens,
        strategy: ContextLimitSchema.shape.strategy.unwrap().optional(),
        keep_last: ContextLimitSchema.shape.keepLast.unwrap().optional(),
      })
      .strict()
      .optional(),
    resilience: z
      .object({
        max_retries: z.number().int().min(0).max(20).optional(),
        initial_delay_ms: z.number().min(0).optional(),
        max_delay_ms: z.number().min(0).optional(),
        backoff_multiplier: z.number().min(1).optional(),
        jitter: z.number().min(0).max(1).optional(),
        retry_on: z.array(z.enum(["rate_limit", "server_error", "timeout", "connection"])).optional(),
        fallbacks: z
          .array(z.object({ model: z.string().min(1).optional(), base_url: z.url().optional(), api_key_env: z.string().min(1).optional() }).strict())
          .optional(),
      })
      .strict()
      .optional(),
  })
  .strict();
export type JianmuFile = z.infer<typeof FileSchema>;

/** A config value that is not valid. Names the field, the value and the file it came from. */
export class ConfigError extends JianmuError {
  static override readonly errorCode = "CONFIG_ERROR";
  override name = "ConfigError";
  constructor(
    readonly field: string,
    readonly value: unknown,
    readonly source: string,
    problem: string,
  ) {
    super(`${source}: ${field} = ${formatValue(value)} is invalid: ${problem}`);
  }
}

function formatValue(value: unknown): string {
  if (value === undefined) return "(missing)";
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let node = root;
  for (const key of path) {
    if (node === null || typeof node !== "object") return undefined;
    node = (node as Record<PropertyKey, unknown>)[key];
  }
  return node;
}

/** Turn the first zod issue into a ConfigError naming the field as the user wrote it. */
function toConfigError(error: z.ZodError, input: unknown, source: string): ConfigError {
  const issue = error.issues[0]!;
  if (issue.code === "unrecognized_keys") {
    const field = [...issue.path, issue.keys[0]!].map(String).join(".");
    return new ConfigError(field, valueAt(input, [...issue.path, issue.keys[0]!]), source, "unknown field; remove it or check its spelling");
  }
  const field = issue.path.map(String).join(".") || "(root)";
  return new ConfigError(field, valueAt(input, issue.path), source, issue.message);
}

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
    raw = parseYaml(text) ?? {};
  } catch (error) {
    throw new ConfigError("(file)", undefined, path, `not valid YAML: ${error instanceof Error ? error.message : String(error)}`);
  }
  const parsed = FileSchema.safeParse(raw);
  if (!parsed.success) throw toConfigError(parsed.error, raw, path);
  return { path, file: parsed.data };
}

/** The file's values as ReActConfig input (camelCase, only the fields it sets). */
function fromFile(file: JianmuFile): ReActConfigInput {
  const r = file.resilience;
  const resilience =
    r &&
    dropUndefined({
      maxRetries: r.max_retries,
      initialDelayMs: r.initial_delay_ms,
      maxDelayMs: r.max_delay_ms,
      backoffMultiplier: r.backoff_multiplier,
      jitter: r.jitter,
      retryOn: r.retry_on,
      fallbacks: r.fallbacks?.map((f) => dropUndefined({ model: f.model, baseURL: f.base_url, apiKeyEnv: f.api_key_env })),
    });
  return dropUndefined({
    model: file.models?.react,
    temperature: file.llm?.temperature,
    maxTokens: file.llm?.max_tokens,
    topP: file.llm?.top_p,
    topK: file.llm?.top_k,
    timeout: file.llm?.timeout,
    maxBudgetTokens: file.llm?.max_budget_tokens,
    maxIterations: file.limits?.max_iterations,
    resilience,
    systemPrompt: file.react?.system_prompt,
    toolChoice: file.react?.tool_choice,
    toolExecution: file.react?.tool_execution,
    maxToolOutputChars: file.react?.max_tool_output_chars,
    extraParams: file.react?.extra_params,
    keys: file.react?.keys,
    outputStrategy: file.react?.output_strategy,
    outputRetries: file.react?.output_retries,
    context: file.context && dropUndefined({ maxTokens: file.context.max_tokens, strategy: file.context.strategy, keepLast: file.context.keep_last }),
  });
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
  const fileInput = found ? fromFile(found.file) : {};
  const fromFileParsed = ReActConfig.safeParse(fileInput);
  if (!fromFileParsed.success) throw toConfigError(fromFileParsed.error, fileInput, found?.path ?? "jianmu.yaml");
  const merged = { ...fileInput, ...dropUndefined(overrides as Record<string, unknown>) };
  const parsed = ReActConfig.safeParse(merged);
  if (!parsed.success) throw toConfigError(parsed.error, merged, "config");
  return parsed.data;
}
