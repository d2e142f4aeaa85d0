import { join } from "node:path";
import { afterEach } from "vitest";
import { loadRecording, startOpenAIServer, type OpenAIServer, type RecordedInteraction, type Respond } from "../../testing.js";

/** The path of a recording under test/fixtures/<api>/vercel-ai/. */
export function fixturePath(api: "anthropic" | "openai", path: string): string {
  return join(import.meta.dirname, "..", "fixtures", api, "vercel-ai", path);
}

/** The interactions of a recording under test/fixtures/<api>/vercel-ai/. */
export function recordingsOf(api: "anthropic" | "openai"): (path: string) => RecordedInteraction[] {
  return (path) => loadRecording(fixturePath(api, path)).interactions;
}

/** A loopback server per test, started by the returned function and closed after the test. */
export function loopbackPerTest(): (respond: Respond) => Promise<OpenAIServer> {
  let server: OpenAIServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });
  return async (respond) => (server = await startOpenAIServer({ respond }));
}
