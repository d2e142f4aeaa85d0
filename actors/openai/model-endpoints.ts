import type OpenAI from "openai";
import { loadedOpenAI } from "./openai-sdk.js";
import type { ModelApi, ReasoningOptions } from "../model-api.js";
import type { EndpointTuning } from "./openai-wire.js";
import type { AttemptTarget } from "./resilience.js";
import { publicEndpoint, secretRedactor, urlSecrets } from "./redact.js";
import { acceptsFor, type Accepts, type AcceptsOption } from "../content-capabilities.js";

export const OPENAI_BASE_URL = "https://api.openai.com/v1";

/** Sent as the key to servers that need none (local vLLM, llama.cpp, Ollama): the SDK insists on one. */
export const NO_KEY = "no-key";

/** An endpoint+model the call may be sent to, with everything one attempt needs. */
export interface CallTarget extends AttemptTarget {
  client: OpenAI;
  tuning: EndpointTuning;
  /** The content parts this target's model takes besides text. */
  accepts: Accepts;
  /** 0 for the primary endpoint, n for the n-th fallback (what `ModelTurn.route` reports). */
  fallback: number;
  /** Set when this target cannot be used as configured; the attempt fails with this reason. */
  unavailable?: string;
}

/** Where one endpoint is and how to talk to it, before a model is chosen. */
export interface EndpointSpec {
  baseURL: string;
  apiKey: string;
  streamUsage?: boolean;
  maxTokensParam?: EndpointTuning["maxTokensParam"];
  accepts?: AcceptsOption;
  api?: ModelApi;
  reasoning?: ReasoningOptions;
  store?: boolean;
}

/** The tuning an endpoint gets unless configured otherwise (see `EndpointTuning`). */
function tuningFor(host: string, spec: EndpointSpec): EndpointTuning {
  const tuning: EndpointTuning = {
    streamUsage: spec.streamUsage ?? true,
    maxTokensParam: spec.maxTokensParam ?? (host === "api.openai.com" ? "max_completion_tokens" : "max_tokens"),
    api: spec.api ?? "chat",
  };
  if (spec.reasoning !== undefined) tuning.reasoning = spec.reasoning;
  if (spec.store !== undefined) tuning.store = spec.store;
  return tuning;
}

function hostOf(baseURL: string): string {
  try {
    return new URL(baseURL).hostname;
  } catch {
    // An unparsable URL fails on first use; tuning does not matter then.
    return "";
  }
}

/**
 * One SDK client per (base URL, key), built on first use and reused, so connections are pooled
 * and request-level fallbacks (from `config.resilience`) cost nothing after the first call.
 */
export class ClientPool {
  private readonly clients = new Map<string, OpenAI>();
  /** What a base URL is shown as, and its host: both parse the URL, so each is worked out once. */
  private readonly urls = new Map<string, { endpoint: string; host: string }>();
  constructor(private readonly defaultHeaders?: Record<string, string>) {}

  describe(baseURL: string): { endpoint: string; host: string } {
    let described = this.urls.get(baseURL);
    if (!described) {
      described = { endpoint: publicEndpoint(baseURL), host: hostOf(baseURL) };
      // Fallbacks come from configuration, so there are only ever a few; the cap is a safety net.
      if (this.urls.size < 64) this.urls.set(baseURL, described);
    }
    return described;
  }

  /** Registers a pre-built client for its own base URL and key. */
  adopt(client: OpenAI): void {
    this.clients.set(poolKey(client.baseURL, client.apiKey ?? NO_KEY), client);
  }

  get(baseURL: string, apiKey: string): OpenAI {
    const key = poolKey(baseURL, apiKey);
    let client = this.clients.get(key);
    if (!client) {
      // The model client loads the SDK before its first call builds a target (`loadCallPath`).
      const sdk = loadedOpenAI();
      if (!sdk) throw new Error("ClientPool.get before the openai SDK was loaded: await loadCallPath() first");
      client = new sdk.OpenAI({
        baseURL,
        apiKey,
        // We retry ourselves (events, backoff policy, fallbacks, the toolChoice rule).
        maxRetries: 0,
        // The SDK logs a chunk it cannot parse, as the server sent it: a line that may quote the key.
        logger: redactingLogger(secretRedactor([apiKey, ...urlSecrets(baseURL)])),
        ...(this.defaultHeaders ? { defaultHeaders: this.defaultHeaders } : {}),
      });
      this.clients.set(key, client);
    }
    return client;
  }
}

type LogFn = (message: string, ...rest: unknown[]) => void;

/** The console (as it is when the SDK logs), with every string the SDK logs passed through `redact` first. */
function redactingLogger(redact: (text: string) => string): Record<"error" | "warn" | "info" | "debug", LogFn> {
  // The SDK logs the raw lines of a chunk as a list of strings.
  const clean = (value: unknown): unknown =>
    typeof value === "string" ? redact(value) : Array.isArray(value) ? value.map((item) => (typeof item === "string" ? redact(item) : item)) : value;
  const to =
    (level: "error" | "warn" | "info" | "debug"): LogFn =>
    (message, ...rest) =>
      console[level](clean(message), ...rest.map(clean));
  return { error: to("error"), warn: to("warn"), info: to("info"), debug: to("debug") };
}

function poolKey(baseURL: string, apiKey: string): string {
  return `${baseURL.replace(/\/$/, "")}\u0000${apiKey}`;
}

/** Built for every fallback of every call, so the URL parsing behind it is the pool's, done once. */
export function targetFor(pool: ClientPool, spec: EndpointSpec, model: string, fallback: number, client?: OpenAI): CallTarget {
  const { endpoint, host } = pool.describe(spec.baseURL);
  return { endpoint, model, client: client ?? pool.get(spec.baseURL, spec.apiKey), tuning: tuningFor(host, spec), accepts: acceptsFor(model, host, spec.accepts), fallback };
}

/** A fallback as written in options or config, before its key is looked up. */
export interface FallbackSpec {
  model?: string | undefined;
  baseURL?: string | undefined;
  apiKey?: string | undefined;
  apiKeyEnv?: string | undefined;
  streamUsage?: boolean | undefined;
  maxTokensParam?: EndpointTuning["maxTokensParam"] | undefined;
  accepts?: AcceptsOption | undefined;
  api?: ModelApi | undefined;
  reasoning?: ReasoningOptions | undefined;
  store?: boolean | undefined;
}

/**
 * The endpoint of a fallback. Its key: `apiKey`, else the variable named by `apiKeyEnv`, else
 * (only when it is the primary's own base URL) the primary key. The primary key is never sent to
 * another host: a fallback elsewhere without a key of its own gets none. Returns a reason
 * string when the named variable is not set. The API and `store` are the primary's unless the
 * fallback sets them; the reasoning settings too, but only for a fallback that keeps the primary's
 * model (another model may not reason, and would refuse them).
 */
export function fallbackEndpoint(
  fallback: FallbackSpec,
  primary: EndpointSpec,
  env: Record<string, string | undefined>,
): EndpointSpec | { unavailable: string; baseURL: string } {
  const baseURL = fallback.baseURL ?? primary.baseURL;
  let apiKey: string | undefined = fallback.apiKey;
  if (apiKey === undefined && fallback.apiKeyEnv !== undefined) {
    apiKey = env[fallback.apiKeyEnv];
    if (apiKey === undefined || apiKey === "") {
      return { unavailable: `environment variable ${fallback.apiKeyEnv} (apiKeyEnv) is not set`, baseURL };
    }
  }
  if (apiKey === undefined) apiKey = sameEndpoint(baseURL, primary.baseURL) ? primary.apiKey : NO_KEY;
  const spec: EndpointSpec = { baseURL, apiKey };
  if (fallback.streamUsage !== undefined) spec.streamUsage = fallback.streamUsage;
  if (fallback.maxTokensParam !== undefined) spec.maxTokensParam = fallback.maxTokensParam;
  if (fallback.accepts !== undefined) spec.accepts = fallback.accepts;
  const api = fallback.api ?? primary.api;
  if (api !== undefined) spec.api = api;
  const reasoning = fallback.reasoning ?? (fallback.model === undefined ? primary.reasoning : undefined);
  if (reasoning !== undefined) spec.reasoning = reasoning;
  const store = fallback.store ?? primary.store;
  if (store !== undefined) spec.store = store;
  return spec;
}

function sameEndpoint(a: string, b: string): boolean {
  return a.replace(/\/$/, "") === b.replace(/\/$/, "");
}
