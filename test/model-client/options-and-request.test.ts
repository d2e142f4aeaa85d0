import { afterEach, describe, expect, it } from "vitest";
import OpenAI from "openai";
import { ai, human, system, toolMessage } from "../../actors/messages.js";
import { ModelError, type ModelRequest } from "../../actors/model-client.js";
import { ModelClientOptionsError } from "../../actors/openai/model-client-options.js";
import { resolveModelClient } from "../../actors/openai/openai-model-client.js";
import { loadRecording } from "../../testing/recordings.js";
import { bodies, caught, clientFor, closeServers, fixture, SECRET_KEY, serve } from "./harness.js";

afterEach(closeServers);

const TEXT_STREAM = loadRecording(fixture("vercel-ai/openai/azure-model-router.1.chunks.txt")).interactions[0]!.reply;
const TEXT_JSON = loadRecording(fixture("vercel-ai/openai/openai-text.json")).interactions[0]!.reply;

function optionsError(fn: () => unknown): ModelClientOptionsError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ModelClientOptionsError);
    return error as ModelClientOptionsError;
  }
  throw new Error("expected a ModelClientOptionsError");
}

describe("resolveModelClient options", () => {
  it("names the bad field and the fix", () => {
    expect(optionsError(() => resolveModelClient({ baseURL: "localhost:11434" })).message).toBe(
      "invalid model client options: baseURL: must be an http(s) URL such as https://api.openai.com/v1 or http://127.0.0.1:11434/v1",
    );
    expect(optionsError(() => resolveModelClient({ model: "" })).message).toContain("model: must be a model name such as gpt-4o-mini");
    expect(optionsError(() => resolveModelClient({ resilience: { maxRetries: -1 } })).message).toContain("resilience.maxRetries:");
    expect(
      optionsError(() => resolveModelClient({ apiKey: "k", fallbacks: [{ baseURL: "nope" }] })).message,
    ).toContain("fallbacks[0].baseURL: must be an http(s) URL");
    const unknown = optionsError(() => resolveModelClient({ apiKey: "k", base_url: "http://x" } as never));
    expect(unknown.message).toContain('unknown option "base_url": remove it (known: envOverride, baseURL');
  });

  it("wants a key for api.openai.com, but not for a local server", () => {
    expect(optionsError(() => resolveModelClient({ env: {} })).message).toContain(
      "apiKey: https://api.openai.com/v1 needs an API key: pass apiKey, or set OPENAI_API_KEY and envOverride: true (or baseURL for a local server: jianmu serve prints one to try without a key)",
    );
    // envOverride already on and the environment empty: the variables to set, not the option already given.
    expect(optionsError(() => resolveModelClient({ envOverride: true, model: "gpt-4o-mini", env: {} })).message).toContain(
      "apiKey: https://api.openai.com/v1 needs an API key, and neither OPENAI_API_KEY nor OPENAI_BASE_URL is set: set OPENAI_API_KEY, or OPENAI_BASE_URL for a local server (jianmu serve prints one to try without a key)",
    );
    expect(resolveModelClient({ baseURL: "http://127.0.0.1:8080/v1", model: "local" }).description).toBe(
      "OpenAI-compatible endpoint http://127.0.0.1:8080/v1, model local",
    );
  });

  it("refuses credentials in a base URL", () => {
    expect(optionsError(() => resolveModelClient({ baseURL: "http://me:secret@127.0.0.1:1/v1" })).message).toContain(
      "baseURL: must not contain a user or password",
    );
  });

  it("checks at resolve time that a fallback's key variable is set", () => {
    expect(
      optionsError(() => resolveModelClient({ apiKey: "k", env: {}, fallbacks: [{ model: "m", apiKeyEnv: "BACKUP_KEY" }] })).message,
    ).toContain("fallbacks[0].apiKeyEnv: environment variable BACKUP_KEY (apiKeyEnv) is not set: set it, or give apiKey");
  });

  it("rejects a pre-built client together with baseURL or apiKey", () => {
    const client = new OpenAI({ apiKey: "k", baseURL: "http://127.0.0.1:1/v1" });
    expect(optionsError(() => resolveModelClient({ client, apiKey: "k2" })).message).toContain("client: give either a pre-built client");
    expect(optionsError(() => resolveModelClient({ client: {} as OpenAI })).message).toContain("client: must be a client made with new OpenAI");
  });

  it("envOverride reads OPENAI_API_KEY, OPENAI_BASE_URL and JIANMU_MODEL, over the options", async () => {
    const server = await serve(() => TEXT_STREAM);
    const client = resolveModelClient({
      envOverride: true,
      baseURL: "http://127.0.0.1:1/v1",
      model: "from-options",
      apiKey: "sk-from-options",
      env: { OPENAI_API_KEY: SECRET_KEY, OPENAI_BASE_URL: server.baseURL, JIANMU_MODEL: "from-env" },
    });
    expect(client.description).toBe(`OpenAI-compatible endpoint ${server.baseURL}, model from-env`);
    const turn = await client.complete({ messages: [human("hi")], tools: [] });
    expect(turn.model).toBe("from-env");
    expect(server.requests[0]!.headers.authorization).toBe(`Bearer ${SECRET_KEY}`);
    expect(optionsError(() => resolveModelClient({ envOverride: true, env: { OPENAI_BASE_URL: "nope" } })).message).toContain(
      "OPENAI_BASE_URL (environment): must be an http(s) URL",
    );
  });

  it("without envOverride the environment is not read", async () => {
    const server = await serve(() => TEXT_STREAM);
    const client = resolveModelClient({ baseURL: server.baseURL, env: { JIANMU_MODEL: "from-env", OPENAI_API_KEY: "sk-env" } });
    const error = (await caught(() => client.complete({ messages: [human("hi")], tools: [] }))) as ModelError;
    expect(error.kind).toBe("config");
    expect(error.message).toContain("no model given");
    expect(server.requests).toHaveLength(0);
  });

  it("uses a pre-built client (its base URL and key) with our retries, not the SDK's", async () => {
    let calls = 0;
    const server = await serve(() => (++calls === 1 ? { kind: "json", status: 500, body: { error: { message: "x" } } } : TEXT_STREAM));
    const sdk = new OpenAI({ apiKey: SECRET_KEY, baseURL: server.baseURL, maxRetries: 5 });
    const client = resolveModelClient({ client: sdk, model: "m", resilience: { maxRetries: 0 } });
    expect(((await caught(() => client.complete({ messages: [human("hi")], tools: [] }))) as ModelError).status).toBe(500);
    expect(server.requests).toHaveLength(1);
  });
});

describe("request body", () => {
  const history = [
    system("Be brief."),
    human("Weather in Paris?"),
    ai("", [{ id: "call_1", name: "get_weather", arguments: '{"city":"Paris"}' }]),
    toolMessage("call_1", "sunny", { name: "get_weather", isError: false }),
    ai("It is sunny."),
    ai(null),
  ];

  it("maps messages, sampling and extras; omits what is unset", async () => {
    const server = await serve(() => TEXT_STREAM);
    const request: ModelRequest = {
      messages: history,
      tools: [],
      temperature: 0.2,
      maxTokens: 99,
      topP: 0.9,
      topK: 40,
      extraParams: { seed: 7, model: "must-not-win", toolChoice: "none" },
    };
    await clientFor(server).complete(request);
    expect(bodies(server)[0]).toEqual({
      seed: 7,
      tool_choice: "none",
      model: "test-model",
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: "Weather in Paris?" },
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "call_1", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } }],
        },
        { role: "tool", tool_call_id: "call_1", content: "sunny" },
        { role: "assistant", content: "It is sunny." },
        { role: "assistant", content: "" },
      ],
      temperature: 0.2,
      // Not api.openai.com: the widely supported name.
      max_tokens: 99,
      top_p: 0.9,
      top_k: 40,
      stream: true,
      stream_options: { include_usage: true },
    });
  });

  it("can turn stream_options off and use max_completion_tokens per endpoint", async () => {
    const server = await serve(() => TEXT_STREAM);
    await clientFor(server, { streamUsage: false, maxTokensParam: "max_completion_tokens" }).complete({
      messages: [human("hi")],
      tools: [],
      maxTokens: 5,
    });
    const [body] = bodies(server);
    expect(body).not.toHaveProperty("stream_options");
    expect(body).not.toHaveProperty("max_tokens");
    expect(body!["max_completion_tokens"]).toBe(5);
    expect(body).not.toHaveProperty("tools");
    expect(body).not.toHaveProperty("tool_choice");
    expect(body).not.toHaveProperty("top_k");
  });

  it("non-streaming: stream false, no stream_options, whole text as one delta", async () => {
    const server = await serve(() => TEXT_JSON);
    const deltas: string[] = [];
    const turn = await clientFor(server, { stream: false }).complete(
      { messages: [human("hi")], tools: [] },
      { onEvent: (e) => e.type === "text.delta" && deltas.push(e.delta) },
    );
    expect(bodies(server)[0]!["stream"]).toBe(false);
    expect(bodies(server)[0]).not.toHaveProperty("stream_options");
    expect(deltas).toEqual([turn.content]);
    expect(turn.serverModel).toBe("gpt-4.1-nano-2025-04-14");
  });

  it("a throwing event listener does not break the call", async () => {
    const server = await serve(() => TEXT_STREAM);
    const turn = await clientFor(server).complete(
      { messages: [human("hi")], tools: [] },
      {
        onEvent: () => {
          throw new Error("listener bug");
        },
      },
    );
    expect(turn.content).toBe("Capital of Denmark.");
  });
});
