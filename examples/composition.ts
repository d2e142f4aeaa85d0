/**
 * Agents composed from agents. A help desk agent asks a research agent (an `agentTool`) what
 * happened to an order, then hands the customer over to a billing agent (a `handoff`). Billing
 * wants to issue a refund, which needs a person's approval: the request bubbles up out of the
 * nested billing agent to the help desk's `runAgent(..., { onApproval })`, marked with its
 * `agentPath`, and the approval travels back down. Every nested event comes out of the help desk
 * with its `agentPath`; the nested agents' tokens count in the help desk's usage.
 *
 * Offline by default: one loopback OpenAI-compatible server answers all three agents with
 * scripted turns (it tells them apart by their system prompts); with OPENAI_API_KEY or
 * OPENAI_BASE_URL set, the same code asks the real model.
 * Run: node examples/run.mjs composition   (test: npx vitest run examples/composition.test.ts)
 */
import { z } from "zod";
import {
  agentTool,
  createReactMachine,
  defineTool,
  handoff,
  human,
  requireApproval,
  runAgent,
  type AgentEmitted,
  type AgentOutput,
  type PendingApproval,
} from "../index.js";
import { replies, type Reply, type Respond } from "../testing.js";
import { failIfFailed } from "./support/outcome.js";
import { connectModel, type EndpointOptions, type OfflineReplay } from "./support/endpoint.js";
import { textTurn, toolCallTurn } from "./support/turns.js";

export const TASK = "My order A-17 arrived broken. Can I get my money back?";

const PROMPTS = {
  desk: "You are the help desk. Use the research tool to find out what happened, then hand billing questions to billing.",
  research: "You are a research agent. Look orders up and report the facts in one sentence.",
  billing: "You are the billing agent. Refund damaged orders with issue_refund, then tell the customer.",
};

/** Each agent's turns, in order; the server picks the list by the request's system prompt. */
const TURNS: Record<keyof typeof PROMPTS, Reply[]> = {
  desk: [
    toolCallTurn([{ id: "call_research", name: "research", args: { input: "What happened to order A-17?" } }]),
    toolCallTurn([{ id: "call_billing", name: "transfer_to_Billing", args: {} }]),
  ],
  research: [
    toolCallTurn([{ id: "call_lookup", name: "lookup_order", args: { order: "A-17" } }]),
    textTurn("Order A-17 (EUR 40) was delivered damaged on 2 May."),
  ],
  billing: [
    toolCallTurn([{ id: "call_refund", name: "issue_refund", args: { order: "A-17", amountEur: 40 } }]),
    textTurn("I refunded EUR 40 for order A-17; you will see it in 3 to 5 days."),
  ],
};

function offlineTurns(): OfflineReplay {
  const asked = { desk: 0, research: 0, billing: 0 };
  const respond: Respond = (request) => {
    const messages = (request.body as { messages?: { role: string; content?: unknown }[] }).messages ?? [];
    const prompt = String(messages.find((m) => m.role === "system")?.content ?? "");
    const agent = (Object.keys(PROMPTS) as (keyof typeof PROMPTS)[]).find((name) => prompt.includes(PROMPTS[name]));
    if (!agent) return replies.error(400, "example script: a request from an agent this script does not know");
    return TURNS[agent][asked[agent]++] ?? replies.error(500, `example script: no turn scripted for ${agent}'s request ${asked[agent]}`);
  };
  return { source: "scripted turns for three agents", respond };
}

export interface CompositionResult {
  output: AgentOutput;
  /** The approvals the person was asked for (from inside the nested billing agent). */
  asked: PendingApproval[];
  refunds: { order: string; amountEur: number }[];
  /** Every event, as the help desk emitted it. */
  events: AgentEmitted[];
}

export async function main(options: EndpointOptions & { log?: (line: string) => void } = {}): Promise<CompositionResult> {
  const log = options.log ?? console.log;
  const endpoint = await connectModel(offlineTurns(), options);
  log(endpoint.banner);
  try {
    const { modelClient } = endpoint;
    const refunds: CompositionResult["refunds"] = [];

    const lookupOrder = defineTool({
      name: "lookup_order",
      description: "Look an order up: its amount and delivery notes.",
      parameters: z.object({ order: z.string().min(1) }),
      execute: ({ order }) => (order === "A-17" ? { order, amountEur: 40, delivery: "delivered 2 May, box crushed, item damaged" } : { order, error: "no such order" }),
    });
    const issueRefund = defineTool({
      name: "issue_refund",
      description: "Refund an order to the customer's card.",
      parameters: z.object({ order: z.string().min(1), amountEur: z.number().positive() }),
      effectTags: ["money"],
      execute: ({ order, amountEur }) => {
        refunds.push({ order, amountEur });
        return `refund of EUR ${amountEur} for ${order} issued`;
      },
    });

    const research = createReactMachine({ name: "Research", modelClient, tools: [lookupOrder], config: { systemPrompt: PROMPTS.research }, configFile: false });
    const billing = createReactMachine({
      name: "Billing",
      modelClient,
      tools: [issueRefund],
      constraints: [requireApproval({ effectTags: ["money"], reason: "refunds need a person" })],
      config: { systemPrompt: PROMPTS.billing },
      configFile: false,
    });
    const desk = createReactMachine({
      name: "HelpDesk",
      modelClient,
      tools: [agentTool(research, { name: "research", description: "Ask the research agent a question about orders" }), handoff(billing)],
      config: { systemPrompt: PROMPTS.desk, maxBudgetTokens: 20_000 },
      configFile: false,
    });

    const events: AgentEmitted[] = [];
    const asked: PendingApproval[] = [];
    const where = (event: { agent: string; agentPath?: { agent: string }[] }) => (event.agentPath ? event.agentPath.map((p) => p.agent).join(" › ") : event.agent);
    const output = await runAgent(desk, { messages: [human(TASK)] }, {
      onEvent: (event) => {
        events.push(event);
        if (event.type === "tool.call.started") log(`[${where(event)}] ${event.name} ${event.arguments}`);
        if (event.type === "agent.handoff") log(`[${event.agent}] hands the conversation to ${event.to}`);
      },
      // The billing agent's refund waits here, two agents up: the answer goes back down its agentPath.
      onApproval: (request) => {
        asked.push(request);
        log(`person asked (from ${request.agentPath?.map((p) => p.agent).join(" › ") ?? "the help desk"}): ${request.name} ${request.arguments}? yes`);
        return { approve: true };
      },
    });
    failIfFailed(output, log);
    log(`answer: ${output.finalAnswer ?? "(none)"} (${output.usage.totalTokens} tokens across the three agents)`);
    return { output, asked, refunds, events };
  } finally {
    await endpoint.close();
  }
}
