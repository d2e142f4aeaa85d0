import type { streamText } from "ai";
import type { ModelRequest } from "../model-client.js";
import { AttemptError } from "../openai/model-failure.js";

export type ProviderOptions = NonNullable<Parameters<typeof streamText>[0]["providerOptions"]>;

/** The sampling settings and provider options of one call, as `streamText` takes them. */
export interface CallSettings {
  temperature?: number;
  maxOutputTokens?: number;
  topP?: number;
  topK?: number;
  seed?: number;
  stopSequences?: string[];
  presencePenalty?: number;
  frequencyPenalty?: number;
  providerOptions?: ProviderOptions;
}

/** A `response_format: json_schema` (the "native" output strategy), for the SDK's structured output. */
export interface ResponseFormat {
  schema: Record<string, unknown>;
  name?: string;
}

/**
 * `extraParams` keys an AI SDK call understands: the Chat Completions names the rest of jianmu
 * writes (`seed`, `stop`, `response_format`, ...) and `providerOptions`, passed to the provider as
 * is. Any other key has no place in a provider-neutral call, so it is refused by name.
 */
const EXTRA_PARAMS = ["providerOptions", "seed", "stop", "presence_penalty", "frequency_penalty", "response_format"];

export function callSettingsOf(request: ModelRequest, clientOptions: ProviderOptions | undefined): { settings: CallSettings; responseFormat?: ResponseFormat } {
  const settings: CallSettings = {};
  if (request.temperature !== undefined) settings.temperature = request.temperature;
  if (request.maxTokens !== undefined) settings.maxOutputTokens = request.maxTokens;
  if (request.topP !== undefined) settings.topP = request.topP;
  if (request.topK !== undefined) settings.topK = request.topK;
  const extra = request.extraParams ?? {};
  const unknown = Object.keys(extra).filter((key) => !EXTRA_PARAMS.includes(key));
  if (unknown.length > 0) {
    throw configError(`extraParams.${unknown[0]}: an AI SDK model takes no such parameter; pass provider settings as extraParams.providerOptions ({ <provider>: { ... } }) or fromAiSdk(model, { providerOptions })`);
  }
  if (typeof extra["seed"] === "number") settings.seed = extra["seed"];
  if (typeof extra["presence_penalty"] === "number") settings.presencePenalty = extra["presence_penalty"];
  if (typeof extra["frequency_penalty"] === "number") settings.frequencyPenalty = extra["frequency_penalty"];
  const stop = extra["stop"];
  if (stop !== undefined) settings.stopSequences = typeof stop === "string" ? [stop] : (stop as string[]);
  const providerOptions = mergedProviderOptions(clientOptions, extra["providerOptions"]);
  if (providerOptions !== undefined) settings.providerOptions = providerOptions;
  const responseFormat = responseFormatOf(extra["response_format"]);
  return responseFormat ? { settings, responseFormat } : { settings };
}

/** The client's provider options with the request's laid over them, provider by provider. */
function mergedProviderOptions(client: ProviderOptions | undefined, request: unknown): ProviderOptions | undefined {
  if (request === undefined) return client;
  if (typeof request !== "object" || request === null || Array.isArray(request)) {
    throw configError("extraParams.providerOptions: must be an object keyed by provider, such as { anthropic: { thinking: { type: \"enabled\", budgetTokens: 1024 } } }");
  }
  const merged: ProviderOptions = { ...client };
  for (const [provider, values] of Object.entries(request as ProviderOptions)) merged[provider] = { ...merged[provider], ...values };
  return merged;
}

function responseFormatOf(format: unknown): ResponseFormat | undefined {
  const spec = format as { type?: unknown; json_schema?: { schema?: unknown; name?: unknown } } | undefined;
  if (spec?.type !== "json_schema" || typeof spec.json_schema?.schema !== "object" || spec.json_schema.schema === null) return undefined;
  const out: ResponseFormat = { schema: spec.json_schema.schema as Record<string, unknown> };
  if (typeof spec.json_schema.name === "string") out.name = spec.json_schema.name;
  return out;
}

function configError(message: string): AttemptError {
  return new AttemptError({ category: "config", kind: "config", message, delivered: false });
}
