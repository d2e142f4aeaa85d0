/**
 * Claude through the AI SDK: `fromAiSdk(anthropic("claude-sonnet-4-5"))` from `jianmu/ai-sdk` makes
 * any AI SDK language model the agent's model client. Anthropic's extended thinking is a provider
 * option passed through as is; the thinking streams as `reasoning.delta` events.
 *
 * Offline by default: a real claude-sonnet-4-5 reply with extended thinking (recorded by vercel/ai's
 * test suite, test/fixtures/anthropic/SOURCES.md) replayed by a loopback server speaking the
 * Anthropic Messages API. With ANTHROPIC_API_KEY set (ANTHROPIC_BASE_URL for a proxy), the same
 * code asks the real model.
 * Run: node examples/run.mjs claude-ai-sdk   (test: npx vitest run examples/claude-ai-sdk.test.ts)
 */
import { createAnthropic } from "@ai-sdk/anthropic";
import { fromAiSdk } from "../ai-sdk.js";
import { createReactMachine, human, runAgent, type AgentOutput } from "../index.js";
import { replayRecording, startOpenAIServer } from "../testing.js";
import { calculator } from "./responses-reasoning.js";
import { failIfFailed } from "./support/outcome.js";
import { repoPath } from "./support/paths.js";

export const QUESTION = "The previous result was 925. Now divide it by 5.";
export const RECORDING = repoPath("test", "fixtures", "anthropic", "vercel-ai", "anthropic-clear-thinking.1.chunks.txt");

export async function main(options: { env?: Record<string, string | undefined>; log?: (line: string) => void } = {}): Promise<AgentOutput> {
  const log = options.log ?? console.log;
  const env = options.env ?? process.env;
  const live = Boolean(env["ANTHROPIC_API_KEY"]?.trim());
  // Offline, the provider talks to a loopback Messages API replaying the recorded reply.
  const server = live ? undefined : await startOpenAIServer({ respond: replayRecording(RECORDING) });
  const anthropic = createAnthropic(server ? { baseURL: server.baseURL, apiKey: "offline-example" } : { apiKey: env["ANTHROPIC_API_KEY"]!, ...(env["ANTHROPIC_BASE_URL"] ? { baseURL: env["ANTHROPIC_BASE_URL"] } : {}) });
  const modelClient = fromAiSdk(anthropic("claude-sonnet-4-5"), {
    providerOptions: { anthropic: { thinking: { type: "enabled", budgetTokens: 1024 } } }, // extended thinking, as Anthropic's provider takes it
  });
  log(server ? `offline: a real claude-sonnet-4-5 reply recorded by vercel/ai's test suite, replayed at ${server.baseURL} (set ANTHROPIC_API_KEY for the real model)` : `live: ${modelClient.description}`);
  try {
    const machine = createReactMachine({ modelClient, tools: [calculator] });
    let thinking = "";
    const output = await runAgent(machine, { messages: [human(QUESTION)] }, {
      onEvent: (event) => {
        if (event.type === "reasoning.delta") thinking += event.delta;
      },
    });
    failIfFailed(output, log); // a failed run says why, and ends the example with exit code 1
    log(`thinking: ${thinking.replace(/\s+/g, " ").trim()}`);
    log(output.finalAnswer ?? "");
    log(`tokens: ${output.usage.promptTokens} in, ${output.usage.completionTokens} out`);
    return output;
  } finally {
    await server?.close();
  }
}
