import type OpenAI from "openai";
import { z } from "zod";
import { FallbackSchema, ResilienceSchema } from "../resilience-config.js";
import { modelApiFields } from "../model-api.js";
import type { ResilienceRuntime } from "./resilience.js";
import { JianmuError } from "../../tools/jianmu-error.js";
import { builtOnce } from "../../tools/built-once.js";
import { acceptsOptionSchema } from "../content-capabilities.js";

const URL_FIX = "must be an http(s) URL such as https://api.openai.com/v1 or http://127.0.0.1:11434/v1";

/** What differs between servers in what they accept (see `EndpointTuning`). */
const tuningFields = () => ({
  /** Ask for usage in streams (`stream_options.include_usage`); set false for servers that reject it. */
  streamUsage: z.boolean({ error: "must be true or false" }).optional(),
  /** Which body field carries `maxTokens`; defaults to `max_completion_tokens` on api.openai.com, `max_tokens` elsewhere. */
  maxTokensParam: z.enum(["max_tokens", "max_completion_tokens"], { error: 'must be "max_tokens" or "max_completion_tokens"' }).optional(),
  /** Which content parts the model takes besides text (`{ image, file, audio }`); each left out keeps its default (docs/content-parts.md). */
  accepts: acceptsOptionSchema().optional(),
});

/** A fallback as given in code: the config-file shape plus the per-server tuning. */
const fallbackOptionSchema = () =>
  FallbackSchema.extend({
    baseURL: z.url({ protocol: /^https?$/, error: URL_FIX }).optional(),
    ...tuningFields(),
  }).strict();
export type FallbackOption = z.input<ReturnType<typeof fallbackOptionSchema>>;

const isFunction = (value: unknown) => typeof value === "function";

/**
 * Any record of strings: `process.env` included, whose prototype is not Object's, so a plain
 * `z.record` (which wants a plain object) refuses the one value users pass.
 */
function isEnvironment(value: unknown): boolean {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return false;
  return Object.values(value).every((entry) => entry === undefined || typeof entry === "string");
}

/**
 * A client made by the `openai` package, whichever copy: an app has its own, so `instanceof`
 * against ours would refuse it. What we call on it is what is checked.
 */
function isOpenAIClient(value: unknown): boolean {
  if (value === null || typeof value !== "object") return false;
  const client = value as { baseURL?: unknown; chat?: { completions?: { create?: unknown } } };
  return typeof client.baseURL === "string" && typeof client.chat?.completions?.create === "function";
}

/** Built on the first `ModelClient.resolve()`, not on `import "jianmu"` (`builtOnce`). */
export const ModelClientOptionsSchema = builtOnce(() =>
  z
    .object({
      /** Read OPENAI_API_KEY, OPENAI_BASE_URL and JIANMU_MODEL; when set they override the options below. */
      envOverride: z.boolean({ error: "must be true or false" }).default(false),
      baseURL: z.url({ protocol: /^https?$/, error: URL_FIX }).optional(),
      apiKey: z.string({ error: "must be a non-empty string (or leave it out and use envOverride with OPENAI_API_KEY)" }).min(1, {
        error: "must be a non-empty string (or leave it out and use envOverride with OPENAI_API_KEY)",
      }).optional(),
      /** The default model; `ModelRequest.model` overrides it per call. */
      model: z.string({ error: "must be a model name such as gpt-4o-mini" }).min(1, { error: "must be a model name such as gpt-4o-mini" }).optional(),
      /** Tried in order once the primary endpoint has failed for good. Replaces `resilience.fallbacks` when given. */
      fallbacks: z.array(fallbackOptionSchema()).optional(),
      resilience: ResilienceSchema.optional(),
      ...modelApiFields(),
      /** Stream responses (default true): text reaches the caller as it is generated. */
      stream: z.boolean({ error: "must be true or false" }).default(true),
      ...tuningFields(),
      /** Per-attempt time limit when the request sets none (default 10 minutes). */
      timeoutMs: z.number({ error: "must be a number of milliseconds" }).positive({ error: "must be more than 0 milliseconds" }).optional(),
      /** Extra headers on every request (e.g. OpenRouter's HTTP-Referer). Keys go in apiKey, not here. */
      defaultHeaders: z.record(z.string(), z.string(), { error: "must map header names to string values" }).optional(),
      /** A pre-built SDK client for the primary endpoint; its own base URL and key are used. */
      client: z
        .custom<OpenAI>(isOpenAIClient, { error: "must be a client made with new OpenAI({...}) from the openai package" })
        .optional(),
      /** The environment to read (default process.env); for tests. */
      env: z.custom<Record<string, string | undefined>>(isEnvironment, { error: "must be an object of environment variables (string values), e.g. process.env" }).optional(),
      /** Waits between retries (default: a real, abortable timer); for tests. */
      sleep: z.custom<ResilienceRuntime["sleep"]>(isFunction, { error: "must be a function (ms, signal) => Promise<void>" }).optional(),
      /** Jitter source in [0, 1) (default Math.random); for tests. */
      random: z.custom<ResilienceRuntime["random"]>(isFunction, { error: "must be a function returning a number in [0, 1)" }).optional(),
    })
    .strict(),
);

export type ModelClientOptions = z.input<ReturnType<typeof ModelClientOptionsSchema>>;
export type ParsedModelClientOptions = z.output<ReturnType<typeof ModelClientOptionsSchema>>;

/** Bad options for the model client. The message names each wrong field and how to fix it. */
export class ModelClientOptionsError extends JianmuError {
  static override readonly errorCode = "MODEL_CLIENT_OPTIONS_ERROR";
  override name = "ModelClientOptionsError";
  constructor(readonly problems: readonly string[]) {
    super(`invalid model client options: ${problems.join("; ")}`);
  }
}

export function parseModelClientOptions(options: unknown): ParsedModelClientOptions {
  const parsed = ModelClientOptionsSchema().safeParse(options ?? {});
  if (parsed.success) return parsed.data;
  throw new ModelClientOptionsError(parsed.error.issues.map(describeIssue));
}

function describeIssue(issue: z.core.$ZodIssue): string {
  const path = issue.path.map((part) => (typeof part === "number" ? `[${part}]` : `.${String(part)}`)).join("").replace(/^\./, "");
  if (issue.code === "unrecognized_keys") {
    const where = path === "" ? "" : `${path}: `;
    const known = path === "" ? Object.keys(ModelClientOptionsSchema().shape).join(", ") : "see the documented fields";
    return `${where}unknown option ${issue.keys.map((k) => `"${k}"`).join(", ")}: remove it (known: ${known})`;
  }
  return `${path === "" ? "(options)" : path}: ${issue.message}`;
}
