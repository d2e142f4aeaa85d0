/**
 * The minimal agent: a model, one tool, one question. The three lines that matter are marked.
 *
 * Offline by default (scripted turns over a loopback OpenAI-compatible server); with
 * OPENAI_API_KEY or OPENAI_BASE_URL set, the same code asks the real model.
 * Run: node examples/run.mjs minimal   (or the test: npx vitest run examples/minimal.test.ts)
 */
import { calculatorTool, createReactMachine, human, runAgent, type AgentOutput } from "../index.js";
import { connectModel, type EndpointOptions } from "./support/endpoint.js";
import { failIfFailed } from "./support/outcome.js";
import { scriptedTurns, textTurn, toolCallTurn } from "./support/turns.js";

export const TASK = "What is 25 * 4 + 10?";

/** What a model answers to TASK: call the calculator, then answer with its result. */
export const OFFLINE_TURNS = scriptedTurns([
  toolCallTurn([{ id: "call_calc_1", name: "calculator", args: { expression: "25 * 4 + 10" } }]),
  textTurn("25 * 4 + 10 = 110."),
]);

export async function main(options: EndpointOptions & { log?: (line: string) => void } = {}): Promise<AgentOutput> {
  const log = options.log ?? console.log;
  const { modelClient, banner, close } = await connectModel(OFFLINE_TURNS, options);
  log(banner);
  try {
    const machine = createReactMachine({ modelClient, tools: [calculatorTool] }); // 1. the agent
    const output = await runAgent(machine, { messages: [human(TASK)] }); // 2. run it
    failIfFailed(output, log); // a failed run says why, and ends the example with exit code 1
    log(output.finalAnswer ?? ""); // 3. the answer
    return output;
  } finally {
    await close();
  }
}
