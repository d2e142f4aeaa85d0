import { createOpenAI } from "@ai-sdk/openai";
import { generateText, stepCountIs, streamText, tool } from "ai";
import { z } from "zod";
import { BENCH_PROMPT } from "./task.mjs";
import { toolBodies } from "./tools.mjs";

/*
 * The Vercel AI SDK as a contender: `generateText` / `streamText` with the OpenAI provider's Chat
 * Completions model, the same tools (zod-validated arguments, the floor's bodies), the same system
 * prompt, its own tool loop (`stopWhen: stepCountIs(50)`, like jianmu's `maxIterations: 50`) and
 * the same retry policy (2 per call). Version 6 is the last major that runs on Node 20.
 */

const tools = {
  lookup: tool({
    description: "Look up one item by name and return what is known about it.",
    inputSchema: z.object({ query: z.string().describe("the item to look up") }),
    execute: (args) => toolBodies.lookup(args),
  }),
  sleep: tool({
    description: "Wait for the given number of milliseconds.",
    inputSchema: z.object({ ms: z.number().int().min(0).describe("how long to wait") }),
    execute: (args) => toolBodies.sleep(args),
  }),
};

/** The OpenAI provider's Chat Completions model at the bench server (or answered from memory with `fetch`). */
export function aiSdkChatModel({ baseURL, model, fetch, apiKey }) {
  return createOpenAI({ baseURL, apiKey, ...(fetch ? { fetch } : {}) }).chat(model);
}

/**
 * @param {{ baseURL: string, model: string, stream: boolean, fetch?: typeof fetch, apiKey: string, system: string }} options
 */
export function createAiSdk({ baseURL, model, stream, fetch, apiKey, system }) {
  const settings = { model: aiSdkChatModel({ baseURL, model, fetch, apiKey }), system, tools, stopWhen: stepCountIs(50), maxRetries: 2 };
  return {
    name: "aisdk",
    /** Resolves with the last step's text; `onText` hears every streamed piece of it. */
    async run(prompt = BENCH_PROMPT, { onText } = {}) {
      if (!stream) return (await generateText({ ...settings, prompt })).text;
      const result = streamText({ ...settings, prompt });
      for await (const delta of result.textStream) onText?.(delta);
      return result.text;
    },
  };
}
