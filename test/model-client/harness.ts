import { readdirSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { expect } from "vitest";
import { ModelError, type ModelCallEvent, type ModelClient } from "../../actors/model-client.js";
import { resolveModelClient, type ModelClientOptions } from "../../actors/openai/openai-model-client.js";
import { startOpenAIServer, type OpenAIServer, type Respond } from "../../testing/openai-server.js";

export const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), "..", "fixtures", "openai");

/** The folders holding recordings of the Responses API (`POST /v1/responses`), see SOURCES.md. */
export const RESPONSES_FOLDERS = ["pydantic-ai/test_openai_responses/", "vercel-ai/openai-responses/"] as const;

export function isResponsesRecording(relative: string): boolean {
  return RESPONSES_FOLDERS.some((folder) => relative.startsWith(folder));
}

/** Every recording file under the fixtures folder (SOURCES.md aside), by its path relative to it. */
export function recordingFiles(dir: string = FIXTURES): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return recordingFiles(path);
    return name === "SOURCES.md" ? [] : [relative(FIXTURES, path)];
  });
}

export function fixture(relative: string): string {
  return join(FIXTURES, relative);
}

/** A key that must never show up in an error or an event. */
export const SECRET_KEY = "sk-test-NEVER-SHOW-THIS-7f3a9c1e5b2d4680";

/** Tiny delays, no jitter: the suite stays fast and the waits are predictable. */
export const FAST_RESILIENCE = { initialDelayMs: 1, maxDelayMs: 1_000, backoffMultiplier: 2, jitter: 0 } as const;

const servers: OpenAIServer[] = [];

/** A server that the `closeServers` afterEach hook shuts down. */
export async function serve(respond: Respond): Promise<OpenAIServer> {
  const server = await startOpenAIServer({ respond });
  servers.push(server);
  return server;
}

export async function closeServers(): Promise<void> {
  await Promise.all(servers.splice(0).map((server) => server.close()));
}

export function clientFor(server: OpenAIServer, options: ModelClientOptions = {}): ModelClient {
  return resolveModelClient({
    baseURL: server.baseURL,
    apiKey: SECRET_KEY,
    model: "test-model",
    resilience: FAST_RESILIENCE,
    ...options,
  });
}

export function eventLog() {
  const events: ModelCallEvent[] = [];
  return {
    events,
    onEvent: (event: ModelCallEvent) => events.push(event),
    ofType<T extends ModelCallEvent["type"]>(type: T): Extract<ModelCallEvent, { type: T }>[] {
      return events.filter((event): event is Extract<ModelCallEvent, { type: T }> => event.type === type);
    },
  };
}

/** Runs `fn` and returns what it threw (fails the test when it does not throw). */
export async function caught(fn: () => Promise<unknown>): Promise<unknown> {
  try {
    await fn();
  } catch (error) {
    return error;
  }
  throw new Error("expected the call to fail, but it succeeded");
}

/** What a recording's failure must come to, read off the file. */
export interface ExpectedModelError {
  kind: string;
  status?: number;
  code?: string;
  messageContains: string[];
}

/** The call failed as a `ModelError` of that kind, status and code, whose message says where (endpoint and model). */
export function checkError(error: unknown, expected: ExpectedModelError): void {
  expect(error).toBeInstanceOf(ModelError);
  const modelError = error as ModelError;
  expect(modelError.kind).toBe(expected.kind);
  expect(modelError.status).toBe(expected.status);
  expect(modelError.code).toBe(expected.code);
  for (const part of expected.messageContains) expect(modelError.message).toContain(part);
  expect(modelError.message).toMatch(/http:\/\/127\.0\.0\.1:\d+\/v1 \(model [^)]+\)/);
}

/** The recorded requests' JSON bodies. */
export function bodies(server: OpenAIServer): Record<string, unknown>[] {
  return server.requests.map((request) => request.body as Record<string, unknown>);
}
