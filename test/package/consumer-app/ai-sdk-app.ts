/**
 * An app on today's AI SDK: jianmu's agent over `openai(...)` from the app's own @ai-sdk/openai
 * (its latest major, whose models implement the AI SDK's specification v4) through `fromAiSdk`.
 * Typechecked strictly (skipLibCheck false) and run by test/package/consumer.test.ts in the
 * "latest, Node 22" app, which installed the latest `ai` and `@ai-sdk/openai` beside the tarball.
 */
import { createOpenAI } from "@ai-sdk/openai";
import { createReactMachine, defineTool, human, runAgent } from "jianmu";
import { fromAiSdk } from "jianmu/ai-sdk";
import { z } from "zod";

const baseURL = process.env["AI_SDK_BASE_URL"];
if (baseURL === undefined) throw new Error("AI_SDK_BASE_URL is not set");

const openai = createOpenAI({ baseURL, apiKey: "ai-sdk-key" });
const model = openai("app-model");

const weather = defineTool({
  name: "get_weather",
  description: "The weather in a city",
  parameters: z.object({ city: z.string() }),
  execute: ({ city }) => `sunny in ${city}`,
});

const agent = createReactMachine({ modelClient: fromAiSdk(model), tools: [weather], configFile: false });
const output = await runAgent(agent, { messages: [human("What is the weather in Paris?")] });
console.log(JSON.stringify({ answer: output.finalAnswer, status: output.status, specificationVersion: model.specificationVersion }));
