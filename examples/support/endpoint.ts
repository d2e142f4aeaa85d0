/**
 * Where an example's model calls go. Two modes, one code path (the real `openai` client over HTTP):
 *
 * - offline (the default, and what the tests force): a loopback OpenAI-compatible server on
 *   127.0.0.1 answers with scripted turns or a recording of real model turns;
 * - live: when OPENAI_API_KEY or OPENAI_BASE_URL is set, the real model (JIANMU_MODEL picks it,
 *   default gpt-4o-mini). OPENAI_BASE_URL alone works for keyless local servers (Ollama, vLLM...).
 */
import { ModelClient, type ModelClientOptions } from "../../index.js";
import { startOpenAIServer, type OpenAIServer, type TurnReplay } from "../../testing.js";

export type EndpointMode = "auto" | "offline" | "live";

export interface EndpointOptions {
  /** "auto" (default): live when OPENAI_API_KEY or OPENAI_BASE_URL is set, offline otherwise. Tests pass "offline". */
  mode?: EndpointMode;
  /** The environment to read (default process.env). */
  env?: Record<string, string | undefined>;
}

export interface ExampleEndpoint {
  modelClient: ModelClient;
  mode: "offline" | "live";
  /** One line saying where the model calls go; examples print it first. */
  banner: string;
  /** The loopback server in offline mode: what the client really sent is in `server.requests`. */
  server?: OpenAIServer;
  /** Stops the loopback server (a no-op live). */
  close(): Promise<void>;
  /** A client for another model on the same endpoint (a cheap judge beside the agent's model, say). */
  another(model: string): ModelClient;
}

const DEFAULT_MODEL = "gpt-4o-mini";

function isSet(value: string | undefined): boolean {
  return value !== undefined && value.trim() !== "";
}

/** How the loopback server answers when no real endpoint is used (see `jianmu/testing`'s turn builders). */
export type OfflineReplay = TurnReplay;

/** What an example sets on its model client in both modes: the API, a reasoning model's settings, the default model. */
export type ClientSettings = Pick<ModelClientOptions, "api" | "reasoning" | "store" | "model">;

export async function connectModel(offline: OfflineReplay, options: EndpointOptions = {}, settings: ClientSettings = {}): Promise<ExampleEndpoint> {
  const { model = DEFAULT_MODEL, ...client } = settings;
  const env = options.env ?? process.env;
  const configured = isSet(env["OPENAI_API_KEY"]) || isSet(env["OPENAI_BASE_URL"]);
  const mode = options.mode ?? "auto";
  if (mode === "live" || (mode === "auto" && configured)) {
    // envOverride: OPENAI_API_KEY, OPENAI_BASE_URL and JIANMU_MODEL are read from the environment.
    const modelClient = ModelClient.resolve({ envOverride: true, env, model, ...client });
    // JIANMU_MODEL names the agent's model, not this one's.
    const another = (other: string) => ModelClient.resolve({ envOverride: true, env: { ...env, JIANMU_MODEL: undefined }, model: other });
    return { modelClient, mode: "live", banner: `live: ${modelClient.description}`, close: async () => {}, another };
  }
  const server = await startOpenAIServer({ respond: offline.respond });
  const modelClient = ModelClient.resolve({ baseURL: server.baseURL, apiKey: "offline-example", model, ...client });
  return {
    modelClient,
    mode: "offline",
    banner: `offline: ${offline.source}, replayed over HTTP by a loopback server at ${server.baseURL} (set OPENAI_API_KEY or OPENAI_BASE_URL for a real model)`,
    server,
    close: () => server.close(),
    another: (other) => ModelClient.resolve({ baseURL: server.baseURL, apiKey: "offline-example", model: other }),
  };
}
