/**
 * A research assistant: several tools (built-in calculator, current_time and a sandboxed
 * read_file, plus one tool of our own), a custom system prompt, a token budget, an iteration cap
 * and a forced tool call on the first round. Every tool call is printed as it happens (onEvent).
 *
 * Offline by default (scripted turns over a loopback OpenAI-compatible server); with
 * OPENAI_API_KEY or OPENAI_BASE_URL set, the same code asks the real model.
 * Run: node examples/run.mjs research-assistant   (test: npx vitest run examples/research-assistant.test.ts)
 */
import { z } from "zod";
import {
  calculatorTool,
  createCurrentTimeTool,
  createReactMachine,
  createReadFileTool,
  defineTool,
  human,
  runAgent,
  type AgentEmitted,
  type AgentOutput,
} from "../index.js";
import type { ReceivedRequest } from "../testing.js";
import { failIfFailed } from "./support/outcome.js";
import { connectModel, type EndpointOptions } from "./support/endpoint.js";
import { repoPath } from "./support/paths.js";
import { scriptedTurns, textTurn, toolCallTurn } from "./support/turns.js";

export const TASK = "Using q3-sales.md, what was our Q3 revenue in US dollars, and how much did it grow over Q2? Date the brief.";

const SYSTEM_PROMPT = [
  "You are a financial research assistant.",
  "Read the source files before answering, compute every figure with the calculator, convert currencies with exchange_rate,",
  "and date your brief with current_time. Answer in at most two sentences.",
].join(" ");

/** Our own tool: a fixed rate table standing in for a real exchange-rate API. */
const RATES_TO_USD: Record<string, number> = { EUR: 1.08, GBP: 1.27, JPY: 0.0067, USD: 1 };
const exchangeRateTool = defineTool({
  name: "exchange_rate",
  description: "How many units of `to` one unit of `from` buys today. Currencies: EUR, GBP, JPY, USD.",
  parameters: z.object({
    from: z.enum(["EUR", "GBP", "JPY", "USD"]).describe("ISO code of the currency to convert from"),
    to: z.enum(["EUR", "GBP", "JPY", "USD"]).describe("ISO code of the currency to convert to"),
  }),
  parallelSafe: true,
  execute: ({ from, to }) => ({ from, to, rate: Number((RATES_TO_USD[from]! / RATES_TO_USD[to]!).toFixed(6)) }),
});

/** When the offline turns were scripted: the replayed clock says so too, so tool results and turns agree. */
const SCRIPTED_AT = new Date("2026-11-02T09:30:00Z");

export const OFFLINE_TURNS = scriptedTurns([
  // Round 1 (toolChoice "required" makes a tool call mandatory): read the source and the clock, in parallel.
  toolCallTurn(
    [
      { id: "call_read_1", name: "read_file", args: { path: "q3-sales.md" } },
      { id: "call_time_1", name: "current_time", args: { timezone: "UTC" } },
    ],
    { promptTokens: 900, completionTokens: 40 },
  ),
  toolCallTurn([{ id: "call_fx_1", name: "exchange_rate", args: { from: "EUR", to: "USD" } }], { promptTokens: 1200, completionTokens: 20 }),
  toolCallTurn(
    [
      { id: "call_calc_1", name: "calculator", args: { expression: "1380000 * 1.08" } },
      { id: "call_calc_2", name: "calculator", args: { expression: "(1380000 - 1200000) / 1200000 * 100" } },
    ],
    { promptTokens: 1300, completionTokens: 50 },
  ),
  textTurn(
    "Brief of 2 November 2026: Q3 2026 revenue was EUR 1,380,000, about USD 1,490,400 at 1.08 USD per EUR, up 15% on Q2 (EUR 1,200,000).",
    { promptTokens: 1450, completionTokens: 60 },
  ),
]);

export interface ResearchOptions extends EndpointOptions {
  /** Total tokens the run may spend (default 20,000): past it the run fails with "tokenBudget". */
  maxBudgetTokens?: number;
  /** Model rounds allowed (default 6): past it the run fails with "maxIterations". */
  maxIterations?: number;
  log?: (line: string) => void;
}

export interface ResearchResult {
  output: AgentOutput;
  /** Each tool call as it started: name and the model's arguments. */
  toolCalls: { name: string; arguments: string }[];
  /** Offline only: the request bodies the openai client really sent. */
  sent: ReceivedRequest[];
}

function short(text: string, max = 90): string {
  const flat = text.replace(/\s+/g, " ");
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

export async function main(options: ResearchOptions = {}): Promise<ResearchResult> {
  const log = options.log ?? console.log;
  const endpoint = await connectModel(OFFLINE_TURNS, options);
  log(endpoint.banner);
  const toolCalls: ResearchResult["toolCalls"] = [];

  const onEvent = (event: AgentEmitted) => {
    switch (event.type) {
      case "tool.call.started":
        toolCalls.push({ name: event.name, arguments: event.arguments });
        return log(`  → ${event.name} ${event.arguments}`);
      case "tool.call.completed":
        return log(`  ← ${event.name} (${event.durationMs} ms) ${short(event.output)}`);
      case "tool.call.failed":
        return log(`  ✗ ${event.name}: ${event.error}`);
      case "reply.completed":
        return log(`round ${event.round}: ${event.toolCalls} tool call(s), ${event.usage.totalTokens} tokens`);
      case "loop.terminated":
        return log(`run ${event.status}${event.reason ? ` (${event.reason})` : ""}: ${event.rounds} rounds, ${event.usage.totalTokens} tokens`);
    }
  };

  try {
    const machine = createReactMachine({
      modelClient: endpoint.modelClient,
      tools: [
        calculatorTool,
        endpoint.mode === "offline" ? createCurrentTimeTool({ now: () => SCRIPTED_AT, defaultTimeZone: "UTC" }) : createCurrentTimeTool(),
        createReadFileTool({ root: repoPath("examples", "data"), maxBytes: 16 * 1024 }),
        exchangeRateTool,
      ],
      config: {
        systemPrompt: SYSTEM_PROMPT,
        maxBudgetTokens: options.maxBudgetTokens ?? 20_000,
        maxIterations: options.maxIterations ?? 6,
        // Sent on the first round only: make the model look at the sources before it says anything.
        toolChoice: "required",
        temperature: 0,
      },
    });
    const output = await runAgent(machine, { messages: [human(TASK)] }, { onEvent });
    const result = { output, toolCalls, sent: [...(endpoint.server?.requests ?? [])] };
    failIfFailed(output, log, result);
    log(output.finalAnswer ?? "");
    return result;
  } finally {
    await endpoint.close();
  }
}
