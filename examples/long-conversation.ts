/**
 * A conversation longer than the context window, and a call that changes per round:
 * - `config.context` keeps every prompt under `maxTokens`: before `AgentLLM`, `CheckContext` counts the
 *   next prompt and `Compacting` trims the oldest turns (never the system prompt, the task, the last
 *   `keepLast` messages, or a tool call without its results), emitting `context.compacted`.
 * - `prepareRound` offers only `read_page` while pages are left, then only `write_summary`, forcing it.
 *
 * Run: node examples/run.mjs long-conversation   (or: npx vitest run examples/long-conversation.test.ts)
 */
import { z } from "zod";
import { createReactMachine, defineTool, human, runAgent, type AgentOutput, type RoundView } from "../index.js";
import { failIfFailed } from "./support/outcome.js";
import { connectModel, type EndpointOptions } from "./support/endpoint.js";
import { scriptedTurns, textTurn, toolCallTurn } from "./support/turns.js";

const PAGES = 8;
const readPage = defineTool({
  name: "read_page",
  description: `Read one page (1-${PAGES}) of the report`,
  parameters: z.object({ page: z.number().int().min(1).max(PAGES) }),
  execute: ({ page }) => `Page ${page}: ${"Revenue grew in every region while costs stayed flat. ".repeat(6)}`,
});
const writeSummary = defineTool({
  name: "write_summary",
  description: "Write the final summary of the report",
  parameters: z.object({ text: z.string() }),
  returnDirect: true,
  execute: ({ text }) => text,
});

/** Pure: decided from the run's data only, so a restored run decides the same. */
export function plan(view: RoundView) {
  const pagesRead = view.messages.filter((m) => m.role === "tool" && m.name === "read_page").length;
  // Trimmed pages are gone from `messages`, so count rounds too: one page per round.
  return view.rounds < PAGES && pagesRead < PAGES
    ? { tools: ["read_page"] }
    : { tools: ["write_summary"], toolChoice: { type: "function" as const, function: { name: "write_summary" } } };
}

const OFFLINE_TURNS = scriptedTurns([
  ...Array.from({ length: PAGES }, (_, i) => toolCallTurn([{ id: `call_p${i + 1}`, name: "read_page", args: { page: i + 1 } }])),
  toolCallTurn([{ id: "call_s", name: "write_summary", args: { text: "Revenue grew everywhere; costs were flat." } }]),
  textTurn("(not reached)"),
]);

export const TASK = `Read all ${PAGES} pages of the report, one per turn, then summarize it.`;

export async function main(options: EndpointOptions & { log?: (line: string) => void } = {}): Promise<AgentOutput> {
  const log = options.log ?? console.log;
  const { modelClient, banner, close } = await connectModel(OFFLINE_TURNS, options);
  log(banner);
  try {
    const machine = createReactMachine({
      modelClient,
      tools: [readPage, writeSummary],
      prepareRound: plan,
      config: { maxIterations: PAGES + 2, context: { maxTokens: 500, strategy: "trim", keepLast: 4 } },
      configFile: false,
    });
    const output = await runAgent(machine, { messages: [human(TASK)] }, {
      onEvent: (event) => {
        if (event.type === "context.compacted") log(`compacted: ${event.before.messages} messages (${event.before.tokens} tokens) -> ${event.after.messages} (${event.after.tokens})`);
      },
    });
    failIfFailed(output, log);
    log(output.finalAnswer ?? "");
    return output;
  } finally {
    await close();
  }
}
