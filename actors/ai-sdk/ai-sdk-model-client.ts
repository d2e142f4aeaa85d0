import { generateText, jsonSchema, Output, streamText, type LanguageModel } from "ai";
import { z } from "zod";
import { ModelError, type ModelCallOptions, type ModelClient, type ModelRequest, type ModelTurn } from "../model-client.js";
import { ResilienceSchema, type Resilience } from "../resilience-config.js";
import { ModelClientOptionsError } from "../openai/model-client-options.js";
import { cancellationOf, type Cancellation } from "../cancellation.js";
import { abortableSleep, callWithResilience, emitSafely, monotonicNow, type ResilienceRuntime } from "../openai/resilience.js";
import { mediaFormsOf, toModelMessages, toToolChoice, toToolSet, type MediaForms } from "./ai-sdk-prompt.js";
import { readTurn, StreamFailure, type TurnListeners } from "./ai-sdk-turn.js";
import { violationTurn, wholeTurn } from "./ai-sdk-whole.js";
import { attemptFailureOf, type AbortCause } from "./ai-sdk-failure.js";
import { callSettingsOf, type ProviderOptions } from "./ai-sdk-settings.js";

/**
 * A model object of the app's AI SDK, not a gateway id string: what its providers return
 * (`LanguageModelV4` on AI SDK 7, `LanguageModelV3` on AI SDK 6) or any other specification its
 * `ai` package runs. Derived from the app's own `ai`, so it is exactly what that `streamText` takes.
 */
export type AiSdkLanguageModel = Exclude<LanguageModel, string>;

export const FromAiSdkOptionsSchema = z
  .object({
    /** Sent with every call (`{ anthropic: { thinking: ... } }`); a request's `extraParams.providerOptions` adds to it per provider. */
    providerOptions: z.record(z.string(), z.record(z.string(), z.unknown())).optional(),
    /** Retries of one call (jianmu's, not the SDK's: the SDK's own are turned off so events and errors stay jianmu's). */
    resilience: ResilienceSchema.optional(),
    /** Time limit of one attempt in milliseconds (default 10 minutes); a request's `timeoutMs` wins. */
    timeoutMs: z.number().int().positive().optional(),
    /**
     * Stream each answer (`streamText`, the default), or ask for it whole (`generateText`: less work
     * per call when no one watches tokens arrive; listeners hear the text as one delta).
     */
    stream: z.boolean().optional(),
  })
  .strict();
export type FromAiSdkOptions = z.input<typeof FromAiSdkOptionsSchema>;

const DEFAULT_TIMEOUT_MS = 10 * 60_000;
const runtime: ResilienceRuntime = { sleep: abortableSleep, random: Math.random, now: monotonicNow };

/**
 * A jianmu `ModelClient` over any AI SDK language model: Claude, Gemini, Bedrock, Mistral, local
 * models, through the provider packages their vendors keep. Each call is one `streamText` step
 * (or `generateText` with `stream: false`) with the agent's tools (never run by the SDK: the agent
 * runs them), streamed as `text.delta` and `reasoning.delta` events; usage with its reasoning and
 * cache-read details; retries, events and typed `ModelError`s as with `ModelClient.resolve`.
 */
export function fromAiSdk(model: AiSdkLanguageModel, options: FromAiSdkOptions = {}): ModelClient {
  if (typeof model !== "object" || model === null || typeof (model as { modelId?: unknown }).modelId !== "string") {
    throw new ModelClientOptionsError(["model: must be an AI SDK language model object, such as anthropic(\"claude-sonnet-4-5\") from @ai-sdk/anthropic (a gateway id string is not one)"]);
  }
  const parsed = FromAiSdkOptionsSchema.safeParse(options);
  if (!parsed.success) throw new ModelClientOptionsError(parsed.error.issues.map((issue) => `${issue.path.join(".") || "options"}: ${issue.message}`));
  return new AiSdkModelClient(model, parsed.data);
}

class AiSdkModelClient implements ModelClient {
  readonly description: string;
  readonly model: string;
  private readonly endpoint: string;
  /** Who answered, as turns and reasoning items name it. */
  private readonly source: { endpoint: string; model: string };
  private readonly policy: Resilience;
  private readonly mediaForms: MediaForms;

  constructor(
    private readonly languageModel: AiSdkLanguageModel,
    private readonly options: z.output<typeof FromAiSdkOptionsSchema>,
  ) {
    this.model = languageModel.modelId;
    this.endpoint = `ai-sdk:${languageModel.provider}`;
    this.policy = options.resilience ?? ResilienceSchema.parse({});
    this.source = { endpoint: this.endpoint, model: this.model };
    this.description = `AI SDK model ${languageModel.provider} ${languageModel.modelId}`;
    this.mediaForms = mediaFormsOf(languageModel);
  }

  complete(request: ModelRequest, options: ModelCallOptions = {}): Promise<ModelTurn> {
    if (request.model !== undefined && request.model !== this.model) {
      return Promise.reject(
        new ModelError(`model call to ${this.endpoint}: config.model asks for ${request.model}, but this client is bound to ${this.model}: leave config.model unset, or pass fromAiSdk() that model`, {
          kind: "config",
          endpoint: this.endpoint,
          model: request.model,
        }),
      );
    }
    const policy = request.resilience ?? this.policy;
    if (policy.fallbacks.length > 0) {
      return Promise.reject(
        new ModelError(`model call to ${this.endpoint}: resilience.fallbacks names OpenAI-compatible endpoints, which an AI SDK model cannot fall back to: remove them from config.resilience`, {
          kind: "config",
          endpoint: this.endpoint,
          model: this.model,
        }),
      );
    }
    const cancellation = options.cancellation ?? (options.signal !== undefined ? cancellationOf(options.signal) : undefined);
    const onEvent = options.onEvent;
    const target = { endpoint: this.endpoint, model: this.model };
    return callWithResilience({
      targets: [target],
      policy,
      runtime,
      cancellation,
      onEvent,
      redact: (text) => text,
      attempt: () => this.attempt(request, options, cancellation),
    });
  }

  /** One step (`streamText`, or `generateText` with `stream: false`) under its own AbortController, released when the attempt ends. */
  private async attempt(request: ModelRequest, options: ModelCallOptions, cancellation: Cancellation | undefined): Promise<ModelTurn> {
    const controller = new AbortController();
    let aborted: AbortCause;
    const stopForCaller = cancellation?.onAbort(() => {
      aborted ??= "caller";
      controller.abort();
    });
    const timeoutMs = request.timeoutMs ?? this.options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const timer = setTimeout(() => {
      aborted ??= "timeout";
      controller.abort();
    }, timeoutMs);
    const onEvent = options.onEvent;
    let delivered = false;
    const listeners: TurnListeners = {
      onText: (delta) => {
        delivered = true;
        if (onEvent) emitSafely(onEvent, { type: "text.delta", delta });
      },
      onReasoning: (delta) => {
        delivered = true;
        if (onEvent) emitSafely(onEvent, { type: "reasoning.delta", delta });
      },
      onToolArguments: options.onToolArguments,
    };
    try {
      const call = this.callOf(request, controller.signal);
      const turn = this.options.stream === false ? await this.whole(call, listeners) : await this.streamed(call, listeners, controller.signal);
      // An abort may end the SDK's stream quietly (an `abort` part, no error): it still fails the attempt.
      if (turn instanceof StreamFailure || aborted !== undefined) throw attemptFailureOf(turn instanceof StreamFailure ? turn.error : new Error("aborted"), { aborted, timeoutMs, delivered });
      return turn;
    } catch (error) {
      throw attemptFailureOf(error, { aborted, timeoutMs, delivered });
    } finally {
      clearTimeout(timer);
      stopForCaller?.();
    }
  }

  /** One `streamText` step read to its end. */
  private streamed(call: StepCall, listeners: TurnListeners, signal: AbortSignal): Promise<ModelTurn | StreamFailure> {
    // Failures come back as the stream's error part; the SDK's default would also print them.
    return readTurn(streamText({ ...call, onError: () => undefined }).fullStream, this.source, listeners, signal);
  }

  /** The whole answer of one `generateText` step; AI SDK 7's tool-choice violation still hands the answer over. */
  private async whole(call: StepCall, listeners: TurnListeners): Promise<ModelTurn> {
    try {
      return wholeTurn(await generateText(call), this.source, listeners);
    } catch (error) {
      const turn = violationTurn(error, this.source, listeners);
      if (turn === undefined) throw error;
      return turn;
    }
  }

  /** The arguments of one step, the same streamed or whole. */
  private callOf(request: ModelRequest, abortSignal: AbortSignal): StepCall {
    const { settings, responseFormat } = callSettingsOf(request, this.options.providerOptions as ProviderOptions | undefined);
    const tools = toToolSet(request.tools);
    const toolChoice = toToolChoice(request.toolChoice);
    const messages = toModelMessages(request.messages, this.source, this.mediaForms);
    return {
      model: this.languageModel,
      // The conversation reaches the step through `prepareStep`, the SDK's hook for a step's
      // messages, which it does not check (nor does its own loop check what it carries from step to
      // step). AI SDK 6 checks a call's `messages` against its schema, every message at every call
      // (O(n) a call, O(n²) a run); these are built from jianmu's own checked messages, so it is
      // given the first one to check (bench/README.md, "A model call through the AI SDK").
      messages: messages.slice(0, 1),
      prepareStep: () => ({ messages }),
      allowSystemInMessages: true,
      ...(tools !== undefined ? { tools } : {}),
      ...(toolChoice !== undefined ? { toolChoice } : {}),
      ...(responseFormat !== undefined ? { output: Output.object({ schema: jsonSchema(responseFormat.schema), ...(responseFormat.name !== undefined ? { name: responseFormat.name } : {}) }) } : {}),
      ...settings,
      // jianmu retries (with its events and typed errors); the SDK's own retries would hide attempts.
      maxRetries: 0,
      abortSignal,
    };
  }
}

/** What `generateText` takes; `streamText` takes the same and a callback or two of the stream's own. */
type StepCall = Parameters<typeof generateText>[0];
