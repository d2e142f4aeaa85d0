/**
 * A reasoning model over the Responses API: `ModelClient.resolve({ api: "responses", reasoning })`.
 * Its reasoning summary streams as `reasoning.delta` events, and its reasoning items (encrypted, as
 * nothing is stored server-side) stay on the assistant message, so every later round sends them
 * back and the model keeps its chain of thought across the tool calls.
 *
 * Offline by default: a real gpt-5.1-codex-max run (four replies, recorded by vercel/ai's test suite,
 * test/fixtures/openai/SOURCES.md) replayed by a loopback server speaking the Responses API. With
 * OPENAI_API_KEY or OPENAI_BASE_URL set, the same code asks the real model (JIANMU_MODEL picks it).
 * Run: node examples/run.mjs responses-reasoning   (test: npx vitest run examples/responses-reasoning.test.ts)
 */
import { z } from "zod";
import { createReactMachine, defineTool, human, runAgent, type AgentOutput, type AssistantMessage } from "../index.js";
import { connectModel, type EndpointOptions } from "./support/endpoint.js";
import { failIfFailed } from "./support/outcome.js";
import { repoPath } from "./support/paths.js";
import { recordedTurns } from "./support/turns.js";

export const TASK = "Add 12 and 7, multiply the result by 3, then multiply that by 10. Use the calculator for each step.";

export const RECORDED_TURNS = recordedTurns(
  repoPath("test", "fixtures", "openai", "vercel-ai", "openai-responses", "openai-reasoning-encrypted-content.1.chunks.txt"),
  "a real gpt-5.1-codex-max run over the Responses API, recorded by vercel/ai's test suite",
);

/** The tool the recorded run calls: one arithmetic step per call. */
export const calculator = defineTool({
  name: "calculator",
  description: "A minimal calculator for basic arithmetic. Call it once per step.",
  parameters: z.object({ a: z.number(), b: z.number(), op: z.enum(["add", "subtract", "multiply", "divide"]) }),
  execute: ({ a, b, op }) => (op === "add" ? a + b : op === "subtract" ? a - b : op === "multiply" ? a * b : a / b),
});

export async function main(options: EndpointOptions & { log?: (line: string) => void } = {}): Promise<AgentOutput> {
  const log = options.log ?? console.log;
  const { modelClient, banner, close } = await connectModel(RECORDED_TURNS, options, {
    model: "gpt-5.1-codex-max",
    api: "responses", // 1. the Responses API
    reasoning: { effort: "high", summary: "detailed" }, // 2. a reasoning model: its summary streams, its items are kept
  });
  log(banner);
  try {
    const machine = createReactMachine({ modelClient, tools: [calculator] });
    let thinking = "";
    const output = await runAgent(machine, { messages: [human(TASK)] }, {
      onEvent: (event) => {
        if (event.type === "reasoning.delta") thinking += event.delta; // 3. the reasoning, as it streams
        if (event.type === "reply.completed" && thinking !== "") {
          log(`thinking: ${thinking.replace(/\s+/g, " ").trim()}`);
          thinking = "";
        }
        if (event.type === "tool.call.completed") log(`${event.name} → ${event.output}`);
      },
    });
    failIfFailed(output, log); // a failed run says why, and ends the example with exit code 1
    const kept = output.messages.filter((message): message is AssistantMessage => message.role === "assistant" && message.reasoningItems !== undefined);
    log(`reasoning items kept in the conversation: ${kept.flatMap((message) => message.reasoningItems!.items).length}`);
    log(output.finalAnswer ?? "");
    log(`tokens: ${output.usage.totalTokens} (reasoning ${output.usage.reasoningTokens ?? "not reported"}, cached prompt ${output.usage.cachedPromptTokens ?? "not reported"})`);
    return output;
  } finally {
    await close();
  }
}
