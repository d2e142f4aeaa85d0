import { ModelError, type ModelCallOptions, type ModelClient, type ModelRequest, type ModelTurn } from "../model-client.js";
import type { ModelRoute } from "../model-route.js";
import type { AttemptInput } from "./openai-attempt.js";
import {
  ModelClientOptionsError,
  parseModelClientOptions,
  type ModelClientOptions,
  type ParsedModelClientOptions,
} from "./model-client-options.js";
import {
  ClientPool,
  fallbackEndpoint,
  NO_KEY,
  OPENAI_BASE_URL,
  targetFor,
  type CallTarget,
  type EndpointSpec,
  type FallbackSpec,
} from "./model-endpoints.js";
import { AttemptBudget } from "./attempt-budget.js";
import { AttemptError } from "./model-failure.js";
import { ContentPartError, mediaOf, refusedMedia, UNSUPPORTED_CONTENT, type MediaUse } from "../content-capabilities.js";
import { loadedCallPath, loadCallPath, type CallPath } from "./openai-sdk.js";
import { publicEndpoint, secretRedactor, urlSecrets } from "./redact.js";
import { ResilienceSchema, type Resilience } from "../resilience-config.js";
import { cancellationOf } from "../cancellation.js";
import { abortableSleep, callWithResilience, emitSafely, monotonicNow, type ResilienceRuntime, type ResilientCall } from "./resilience.js";

export type { ModelClientOptions } from "./model-client-options.js";

/** Per-attempt limit when neither the request nor the options set one: the SDK's own default. */
const DEFAULT_TIMEOUT_MS = 10 * 60_000;

/**
 * The real model client over the official `openai` SDK, against OpenAI or any compatible server:
 * Chat Completions (`api: "chat"`, the default) or the Responses API (`api: "responses"`), the
 * same request either way. Validates `options` (a `ModelClientOptionsError` names each bad field).
 *
 * With `envOverride: true`, OPENAI_API_KEY, OPENAI_BASE_URL and JIANMU_MODEL are read from
 * `options.env` (default `process.env`) and, when set and non-empty, take precedence over
 * `apiKey`, `baseURL` and `model`.
 */
export function resolveModelClient(options: ModelClientOptions = {}): ModelClient {
  return new OpenAIModelClient(parseModelClientOptions(options));
}

class OpenAIModelClient implements ModelClient {
  readonly description: string;
  /** The default model; `ModelRequest.model` overrides it per call. */
  readonly model: string | undefined;
  private readonly pool: ClientPool;
  private readonly primary: EndpointSpec;
  private readonly primaryClient: ParsedModelClientOptions["client"];
  private readonly policy: Resilience;
  private readonly fallbacks: readonly FallbackSpec[];
  private readonly env: Record<string, string | undefined>;
  private readonly stream: boolean;
  private readonly timeoutMs: number;
  private readonly runtime: ResilienceRuntime;
  private readonly knownSecrets: string[];
  /**
   * Built once, not on every call: the primary endpoint's target for each model (as the one-target
   * list a call without fallbacks uses as is), and the redactor of the known secrets.
   */
  private readonly primaryTargets = new Map<string, readonly [CallTarget]>();
  private readonly knownRedactor: (text: string) => string;

  constructor(options: ParsedModelClientOptions) {
    this.env = options.env ?? process.env;
    const fromEnv = options.envOverride ? readEnvironment(this.env) : {};
    if (options.client && (options.baseURL !== undefined || options.apiKey !== undefined)) {
      throw new ModelClientOptionsError([
        "client: give either a pre-built client or baseURL/apiKey, not both (the client already has its own)",
      ]);
    }
    this.pool = new ClientPool(options.defaultHeaders);
    this.primaryClient = options.client;
    if (options.client) {
      this.pool.adopt(options.client);
      this.primary = { baseURL: options.client.baseURL, apiKey: options.client.apiKey ?? NO_KEY };
    } else {
      const baseURL = fromEnv.baseURL ?? options.baseURL ?? OPENAI_BASE_URL;
      if (urlHasCredentials(baseURL)) {
        throw new ModelClientOptionsError([
          `${fromEnv.baseURL ? "OPENAI_BASE_URL" : "baseURL"}: must not contain a user or password (fetch refuses such URLs): pass the key as apiKey`,
        ]);
      }
      const apiKey = fromEnv.apiKey ?? options.apiKey;
      if (apiKey === undefined && new URL(baseURL).hostname === "api.openai.com") {
        throw new ModelClientOptionsError([
          options.envOverride
            ? `apiKey: ${baseURL} needs an API key, and neither OPENAI_API_KEY nor OPENAI_BASE_URL is set: set OPENAI_API_KEY, or OPENAI_BASE_URL for a local server (jianmu serve prints one to try without a key)`
            : `apiKey: ${baseURL} needs an API key: pass apiKey, or set OPENAI_API_KEY and envOverride: true (or baseURL for a local server: jianmu serve prints one to try without a key)`,
        ]);
      }
      this.primary = { baseURL, apiKey: apiKey ?? NO_KEY };
    }
    if (options.streamUsage !== undefined) this.primary.streamUsage = options.streamUsage;
    if (options.maxTokensParam !== undefined) this.primary.maxTokensParam = options.maxTokensParam;
    if (options.accepts !== undefined) this.primary.accepts = options.accepts;
    if (options.api !== undefined) this.primary.api = options.api;
    if (options.reasoning !== undefined) this.primary.reasoning = options.reasoning;
    if (options.store !== undefined) this.primary.store = options.store;
    this.model = fromEnv.model ?? options.model;
    this.policy = options.resilience ?? ResilienceSchema.parse({});
    this.fallbacks = options.fallbacks ?? this.policy.fallbacks;
    // A fallback whose key variable is missing is a configuration mistake: say so now, not mid-run.
    const problems: string[] = [];
    this.fallbacks.forEach((fallback, index) => {
      if (fallback.baseURL !== undefined && urlHasCredentials(fallback.baseURL)) {
        problems.push(`${options.fallbacks ? "fallbacks" : "resilience.fallbacks"}[${index}].baseURL: must not contain a user or password: give apiKey instead`);
      }
      const endpoint = fallbackEndpoint(fallback, this.primary, this.env);
      if ("unavailable" in endpoint) {
        const field = options.fallbacks ? `fallbacks[${index}]` : `resilience.fallbacks[${index}]`;
        problems.push(`${field}.apiKeyEnv: ${endpoint.unavailable}: set it, or give apiKey`);
      }
    });
    if (problems.length > 0) throw new ModelClientOptionsError(problems);
    this.stream = options.stream;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.runtime = {
      sleep: options.sleep ?? abortableSleep,
      random: options.random ?? Math.random,
      now: monotonicNow,
    };
    this.knownSecrets = [this.primary.apiKey, ...urlSecrets(this.primary.baseURL), ...this.fallbackSecrets(this.fallbacks)];
    this.knownRedactor = secretRedactor(this.knownSecrets);
    const extra = this.fallbacks.length > 0 ? ` (+${this.fallbacks.length} fallback${this.fallbacks.length > 1 ? "s" : ""})` : "";
    const api = this.primary.api === "responses" ? " (Responses API)" : "";
    this.description = `OpenAI-compatible endpoint ${publicEndpoint(this.primary.baseURL)}${api}, model ${this.model ?? "(set per request)"}${extra}`;
  }

  /**
   * Not `async`: the call's promise is the retry loop's own, with no wrapper promise and no extra
   * microtask hop per call. Whatever goes wrong before the loop starts still comes back as a rejection.
   */
  complete(request: ModelRequest, options: ModelCallOptions = {}): Promise<ModelTurn> {
    // The first call of the process waits for the SDK (`openai-sdk.ts`); every later one starts at once.
    const path = loadedCallPath();
    if (path === undefined) return loadCallPath().then((loaded) => this.call(loaded, request, options));
    try {
      return this.call(path, request, options);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** The retry loop; with a budget, a call that fails for good says what its attempts may have cost. */
  private call(path: CallPath, request: ModelRequest, options: ModelCallOptions): Promise<ModelTurn> {
    const prepared = this.prepareCall(path, request, options);
    const done = callWithResilience(prepared);
    const budget = prepared.budget;
    return budget ? done.catch((error: unknown) => budget.charge(error)) : done;
  }

  private prepareCall(path: CallPath, request: ModelRequest, options: ModelCallOptions): ResilientCall<CallTarget, ModelTurn> & { budget?: AttemptBudget } {
    const model = request.model ?? this.model;
    if (model === undefined) {
      const endpoint = publicEndpoint(this.primary.baseURL);
      throw new ModelError(
        `model call to ${endpoint}: no model given: set config.model, pass model to ModelClient.resolve(), or set JIANMU_MODEL with envOverride`,
        { kind: "config", endpoint },
      );
    }
    // `config.resilience` replaces the client's settings, fallbacks included (ReActConfig says so).
    const override = request.resilience;
    const policy = override ?? this.policy;
    const fallbacks = override ? override.fallbacks : this.fallbacks;
    const primary = this.primaryOnly(model);
    const targets = fallbacks.length === 0 ? primary : stickyOrder([primary[0], ...this.fallbackTargets(fallbacks, model)], policy, request.route);
    const onEvent = options.onEvent;
    // `options.signal` only when no cheaper `cancellation` comes with it: reading it may build it.
    const cancellation = options.cancellation ?? (options.signal !== undefined ? cancellationOf(options.signal) : undefined);
    const stream = this.stream;
    const timeoutMs = request.timeoutMs ?? this.timeoutMs;
    // Each streamed delta becomes an event; without a listener there is nobody to build it for.
    const onText = onEvent ? (delta: string) => emitSafely(onEvent, { type: "text.delta", delta }) : ignoreText;
    const budget = request.spend ? new AttemptBudget(request.spend) : undefined;
    // Images and files, read once: each target checks them against what its model takes.
    const media = mediaOf(request.messages);
    const onReasoning = onEvent ? (delta: string) => emitSafely(onEvent, { type: "reasoning.delta", delta }) : ignoreText;
    // Only a client with fallbacks says which target answered: without, there is nothing to stick to.
    const routed = targets.length > 1;
    return {
      ...(budget ? { budget } : {}),
      targets,
      policy,
      runtime: this.runtime,
      cancellation,
      onEvent,
      // Redaction only runs on a failure, so a call's own secrets are gathered then, not on every call.
      redact: override ? this.lazyRedactor(fallbacks) : this.knownRedactor,
      attempt: (target) => {
        if (target.unavailable !== undefined) {
          throw new AttemptError({ category: "config", kind: "config", message: target.unavailable, delivered: false });
        }
        if (media !== undefined) refuseMedia(media, target);
        const responses = target.tuning.api === "responses";
        // Built from the same request every time: retries and fallbacks send the same toolChoice.
        // With a budget, each attempt asks for what is left on its model (actors/openai/attempt-budget.ts).
        const cap = budget?.cap(target.model);
        const sent = budget ? { ...request, maxTokens: cap } : request;
        const body = contentChecked(() => (responses ? path.buildResponsesBody(sent, target, stream, target.tuning) : path.buildRequestBody(sent, target.model, stream, target.tuning)));
        const input: AttemptInput = {
          client: target.client,
          body,
          stream,
          timeoutMs,
          model: target.model,
          endpoint: target.endpoint,
          cancellation,
          onText,
          onReasoning,
          onToolArguments: options.onToolArguments,
        };
        if (routed) input.route = { fallback: target.fallback, endpoint: target.endpoint, model: target.model };
        const turn = responses ? path.attemptResponse(input) : path.attemptCompletion(input);
        return budget ? budget.track(target.model, cap, turn) : turn;
      },
    };
  }

  /** The redactor of the known secrets plus the fallbacks' own, built the first time it is needed. */
  private lazyRedactor(fallbacks: readonly FallbackSpec[]): (text: string) => string {
    let redactor: ((text: string) => string) | undefined;
    return (text) => {
      redactor ??= secretRedactor([...this.knownSecrets, ...this.fallbackSecrets(fallbacks)]);
      return redactor(text);
    };
  }

  /** The primary endpoint never changes after construction, so its target list per model is reused. */
  private primaryOnly(model: string): readonly [CallTarget] {
    let targets = this.primaryTargets.get(model);
    if (!targets) {
      targets = Object.freeze([targetFor(this.pool, this.primary, model, 0, this.primaryClient)] as const);
      // A handful of models is the norm; a caller cycling through many must not grow this without bound.
      if (this.primaryTargets.size < 32) this.primaryTargets.set(model, targets);
    }
    return targets;
  }

  private fallbackTargets(fallbacks: readonly FallbackSpec[], model: string): CallTarget[] {
    return fallbacks.map((fallback, index) => {
      const spec = fallbackEndpoint(fallback, this.primary, this.env);
      const fallbackModel = fallback.model ?? model;
      if ("unavailable" in spec) {
        const target = targetFor(this.pool, { baseURL: spec.baseURL, apiKey: NO_KEY }, fallbackModel, index + 1);
        return { ...target, unavailable: spec.unavailable };
      }
      return targetFor(this.pool, spec, fallbackModel, index + 1);
    });
  }

  private fallbackSecrets(fallbacks: readonly FallbackSpec[]): string[] {
    const secrets: string[] = [];
    for (const fallback of fallbacks) {
      if (fallback.apiKey !== undefined) secrets.push(fallback.apiKey);
      if (fallback.baseURL !== undefined) secrets.push(...urlSecrets(fallback.baseURL));
      if (fallback.apiKeyEnv !== undefined) {
        const value = this.env[fallback.apiKeyEnv];
        if (value) secrets.push(value);
      }
    }
    return secrets;
  }
}

/** The three variables `envOverride` reads; empty values count as unset. */
function readEnvironment(env: Record<string, string | undefined>): { apiKey?: string; baseURL?: string; model?: string } {
  const out: { apiKey?: string; baseURL?: string; model?: string } = {};
  const apiKey = env["OPENAI_API_KEY"]?.trim();
  const baseURL = env["OPENAI_BASE_URL"]?.trim();
  const model = env["JIANMU_MODEL"]?.trim();
  if (apiKey) out.apiKey = apiKey;
  if (model) out.model = model;
  if (baseURL) {
    if (!URL.canParse(baseURL) || !/^https?:$/.test(new URL(baseURL).protocol)) {
      throw new ModelClientOptionsError([
        "OPENAI_BASE_URL (environment): must be an http(s) URL such as https://api.openai.com/v1 or http://127.0.0.1:11434/v1",
      ]);
    }
    out.baseURL = baseURL;
  }
  return out;
}

function ignoreText(): void {}

/** A part the target's model cannot take ends this attempt before any request (a fallback may take it). */
function refuseMedia(media: readonly MediaUse[], target: CallTarget): void {
  const refusal = refusedMedia(media, target.accepts, target);
  if (refusal !== undefined) throw new AttemptError({ category: "config", kind: "config", code: UNSUPPORTED_CONTENT, message: refusal.message, delivered: false, cause: refusal });
}

/** A part the API cannot carry (see content-parts-wire.ts) fails the attempt the same way. */
function contentChecked<T>(build: () => T): T {
  try {
    return build();
  } catch (error) {
    if (!(error instanceof ContentPartError)) throw error;
    throw new AttemptError({ category: "config", kind: "config", code: UNSUPPORTED_CONTENT, message: error.message, delivered: false, cause: error });
  }
}

/**
 * The order a call tries its targets in. With sticky fallbacks (the default), a call of a run whose
 * last call a fallback answered starts at that fallback, then the ones after it, then the primary
 * and the ones before: the primary failed for good not long ago. A route that no longer names the
 * same endpoint and model (the configuration changed since) is ignored.
 */
function stickyOrder(targets: CallTarget[], policy: Resilience, route: ModelRoute | undefined): CallTarget[] {
  if (policy.sticky === false || route === undefined || route.fallback === 0) return targets;
  const start = targets[route.fallback];
  if (start === undefined || start.endpoint !== route.endpoint || start.model !== route.model) return targets;
  return [...targets.slice(route.fallback), ...targets.slice(0, route.fallback)];
}

function urlHasCredentials(baseURL: string): boolean {
  const url = new URL(baseURL);
  return url.username !== "" || url.password !== "";
}
