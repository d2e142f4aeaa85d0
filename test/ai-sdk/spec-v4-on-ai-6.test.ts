import { createOpenAI } from "ai-sdk-openai-v4";
import { describe, expect, it } from "vitest";
import { fromAiSdk } from "../../ai-sdk.js";
import { human, ModelError } from "../../index.js";
import { startOpenAIServer, replies } from "../../testing.js";
import { aiMajor } from "./ai-version.js";

/*
 * A provider package made for AI SDK 7 (@ai-sdk/openai 4, specification v4 models) in an app
 * whose `ai` is 6: the app's typecheck refuses the model (fromAiSdk's type is the app's own
 * `LanguageModel`), and untyped code gets a config error naming the fix, before any request.
 * Only in vitest.config.ts's "jianmu" project, where `ai` is 6.
 */
describe("a specification v4 model on AI SDK 6", () => {
  it("is refused by the type and, at run time, by a config error that names the ai major it needs", async () => {
    expect(aiMajor).toBe(6);
    const server = await startOpenAIServer({ respond: () => replies.error(500, "never sent") });
    try {
      const model = createOpenAI({ baseURL: server.baseURL, apiKey: "sk-test" }).chat("gpt-4.1-nano");
      // @ts-expect-error AI SDK 6's LanguageModel has no specification v4.
      const client = fromAiSdk(model);
      const error = await client.complete({ messages: [human("hi")], tools: [] }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ModelError);
      expect(error).toMatchObject({ kind: "config", message: expect.stringContaining("the installed ai package cannot run a model of specification v4: it needs AI SDK 7 (npm install ai@7)") });
      expect(server.requests).toHaveLength(0);
    } finally {
      await server.close();
    }
  });
});
