import { cpSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { ModelClientOptionsError } from "../../actors/openai/model-client-options.js";
import { resolveModelClient } from "../../actors/openai/openai-model-client.js";
import { replies } from "../../testing/openai-server.js";
import { closeServers, serve } from "./harness.js";

afterEach(closeServers);

const ANSWER = { id: "c", object: "chat.completion", created: 1, model: "m", choices: [{ index: 0, message: { role: "assistant", content: "hello" }, finish_reason: "stop" }] };

describe("the environment a client reads", () => {
  it("accepts process.env itself (not a plain object): the value users pass", async () => {
    const server = await serve(() => replies.json(ANSWER));
    const saved = { base: process.env["OPENAI_BASE_URL"], model: process.env["JIANMU_MODEL"] };
    process.env["OPENAI_BASE_URL"] = server.baseURL;
    process.env["JIANMU_MODEL"] = "env-model";
    try {
      expect(Object.getPrototypeOf(process.env)).not.toBe(Object.prototype);
      const client = resolveModelClient({ envOverride: true, env: process.env, model: "gpt-4o-mini", stream: false });
      const turn = await client.complete({ messages: [{ role: "user", content: "hi" }], tools: [] });
      expect(turn.content).toBe("hello");
      expect((server.requests[0]!.body as { model: string }).model).toBe("env-model");
    } finally {
      for (const [key, value] of [["OPENAI_BASE_URL", saved.base], ["JIANMU_MODEL", saved.model]] as const) {
        if (value === undefined) delete process.env[key];
        else process.env[key] = value;
      }
    }
  });

  it("accepts an object without a prototype, and refuses non-string values naming the field", () => {
    const bare = Object.assign(Object.create(null) as Record<string, string>, { OPENAI_BASE_URL: "http://127.0.0.1:9/v1" });
    expect(() => resolveModelClient({ envOverride: true, env: bare, model: "m" })).not.toThrow();
    const error = (() => {
      try {
        resolveModelClient({ env: { PORT: 8080 } as never });
      } catch (caught) {
        return caught as Error;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(ModelClientOptionsError);
    expect(error!.message).toContain("env: must be an object of environment variables (string values), e.g. process.env");
  });
});

describe("a client made by the app's own copy of openai", () => {
  it("is accepted and used, though it is not an instance of our copy's class", async () => {
    // A second copy of the package, as an app's node_modules would hold: a distinct class.
    const dir = mkdtempSync(join(tmpdir(), "jianmu-openai-copy-"));
    cpSync(join(process.cwd(), "node_modules", "openai"), join(dir, "node_modules", "openai"), { recursive: true });
    const theirs = (await import(pathToFileURL(join(dir, "node_modules", "openai", "index.mjs")).href)) as { default: typeof OpenAI };
    expect(theirs.default).not.toBe(OpenAI);
    const server = await serve(() => replies.json(ANSWER));
    const appClient = new theirs.default({ baseURL: server.baseURL, apiKey: "app-key", maxRetries: 0 });
    expect(appClient instanceof OpenAI).toBe(false);
    const client = resolveModelClient({ client: appClient, model: "m", stream: false });
    const turn = await client.complete({ messages: [{ role: "user", content: "hi" }], tools: [] });
    expect(turn.content).toBe("hello");
    expect(server.requests[0]!.headers["authorization"]).toBe("Bearer app-key");
  });
});
