import { SpanStatusCode } from "@opentelemetry/api";
import type { ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { afterEach, describe, expect, it } from "vitest";
import { createActor } from "xstate";
import { requireApproval } from "../../actors/guards/index.js";
import { human } from "../../actors/messages.js";
import { agentTool } from "../../machines/composition/agent-tool.js";
import { handoff } from "../../machines/composition/handoff.js";
import { pendingApprovals } from "../../machines/contract/approvals.js";
import { persistAgent, restoreAgent, runStatusOf } from "../../machines/persistence/persistence.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { runAgent } from "../../machines/runner.js";
import { traceAgent } from "../../otel.js";
import { replies, type OpenAIServer } from "../../testing/openai-server.js";
import { waitFor } from "../persistence/helpers.js";
import { byName, expectNoKey, isChildOf, memoryTracing, one, saveNoteTool, scriptedEndpoint, textTurn, toolCallTurn } from "./helpers.js";

/*
 * Real nested agents (agentTool), each answering from its own loopback server: Orchestrator asks
 * Researcher, which asks Searcher, which saves a note once a person approves it.
 */

const servers: OpenAIServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function endpoint(...turns: Parameters<typeof scriptedEndpoint>[0]) {
  const made = await scriptedEndpoint(turns);
  servers.push(made.server);
  return made;
}

async function threeLevels(options: { searcherFails?: boolean } = {}) {
  const searcher = await endpoint(
    ...(options.searcherFails
      ? [replies.error(400, "the request was malformed")]
      : [toolCallTurn([{ id: "call_save_1", name: "save_note", args: { text: "the answer is 42" } }], { promptTokens: 50, completionTokens: 9 }), textTurn("Saved.", { promptTokens: 70, completionTokens: 2 })]),
  );
  const researcher = await endpoint(
    toolCallTurn([{ id: "call_search_1", name: "ask_searcher", args: { input: "find and save the answer" } }], { promptTokens: 80, completionTokens: 11 }),
    textTurn("The searcher saved it.", { promptTokens: 95, completionTokens: 6 }),
  );
  const orchestrator = await endpoint(
    toolCallTurn([{ id: "call_research_1", name: "ask_researcher", args: { input: "research the answer" } }], { promptTokens: 120, completionTokens: 12 }),
    textTurn("Done: the answer is saved.", { promptTokens: 140, completionTokens: 7 }),
  );
  const Searcher = createReactMachine({
    name: "Searcher",
    modelClient: searcher.modelClient,
    tools: [saveNoteTool],
    constraints: [requireApproval({ tools: ["save_note"] })],
    configFile: false,
  });
  const Researcher = createReactMachine({
    name: "Researcher",
    modelClient: researcher.modelClient,
    tools: [agentTool(Searcher, { name: "ask_searcher", description: "Ask the searcher" })],
    configFile: false,
  });
  const Orchestrator = createReactMachine({
    name: "Orchestrator",
    modelClient: orchestrator.modelClient,
    tools: [agentTool(Researcher, { name: "ask_researcher", description: "Ask the researcher" })],
    configFile: false,
  });
  return { Orchestrator, servers: { searcher: searcher.server, researcher: researcher.server, orchestrator: orchestrator.server } };
}

/** The span tree as "name" lines indented under their parents, children in start order. */
function tree(spans: readonly ReadableSpan[]): string[] {
  const ids = new Set(spans.map((span) => span.spanContext().spanId));
  const start = (span: ReadableSpan) => span.startTime[0] * 1e9 + span.startTime[1];
  const lines: string[] = [];
  const walk = (parent: string | undefined, depth: number) => {
    const children = spans.filter((span) => {
      const of = span.parentSpanContext?.spanId;
      return parent === undefined ? of === undefined || !ids.has(of) : of === parent;
    });
    for (const span of children.sort((a, b) => start(a) - start(b))) {
      lines.push(`${"  ".repeat(depth)}${span.name}`);
      walk(span.spanContext().spanId, depth + 1);
    }
  };
  walk(undefined, 0);
  return lines;
}

const awaiting = (snapshot: { value: unknown; status: string }) => runStatusOf(snapshot) === "awaitingApproval";

describe("traces of nested agents (agentTool)", () => {
  it("nest each agent's invoke_agent under the call that started it, two levels deep, with its model calls, tools and approvals under it", async () => {
    const { Orchestrator } = await threeLevels();
    const tracing = memoryTracing();

    const output = await runAgent(Orchestrator, { messages: [human("What is the answer? Save it.")] }, { tracer: tracing.tracer, onApproval: () => ({ approve: true }) });
    expect(output.status).toBe("succeeded");
    const spans = tracing.spans();

    expect(tree(spans)).toEqual([
      "invoke_agent Orchestrator",
      "  chat gpt-4o-mini",
      "  execute_tool ask_researcher",
      "    invoke_agent Researcher",
      "      chat gpt-4o-mini",
      "      execute_tool ask_searcher",
      "        invoke_agent Searcher",
      "          chat gpt-4o-mini",
      "          awaiting_approval",
      "          execute_tool save_note",
      "          chat gpt-4o-mini",
      "      chat gpt-4o-mini",
      "  chat gpt-4o-mini",
    ]);
    expect(new Set(spans.map((span) => span.spanContext().traceId)).size).toBe(1);

    const searcher = one(spans, "invoke_agent Searcher");
    expect(searcher.attributes).toMatchObject({
      "gen_ai.agent.name": "Searcher",
      "jianmu.agent.path": ["Orchestrator", "Researcher", "Searcher"],
      "gen_ai.tool.call.id": "call_search_1",
      // agentTool derives a nested run's id from its caller's run and the calls that led to it.
      "jianmu.run.id": expect.stringMatching(/^[0-9a-f-]{36}\/.*call_research_1.*call_search_1$/),
      "jianmu.run.status": "succeeded",
      "gen_ai.usage.input_tokens": 120,
      "gen_ai.usage.output_tokens": 11,
    });
    const searcherChats = spans.filter((span) => span.name === "chat gpt-4o-mini" && isChildOf(span, searcher));
    expect(String(searcher.attributes["jianmu.run.id"]).startsWith(`${output.runId}/`)).toBe(true);
    expect(searcherChats.map((chat) => chat.attributes["gen_ai.usage.input_tokens"]).sort()).toEqual([50, 70]);
    expect(one(spans, "awaiting_approval").attributes).toMatchObject({ "gen_ai.tool.call.id": "call_save_1", "jianmu.approval.decision": "approved" });
    expect(one(spans, "execute_tool ask_researcher").attributes).toMatchObject({ "gen_ai.tool.call.id": "call_research_1", "jianmu.tool.status": "completed" });
    expectNoKey(spans);
  });

  it("records a nested agent's failure on its own span; the caller reads it as an error and goes on", async () => {
    const { Orchestrator } = await threeLevels({ searcherFails: true });
    const tracing = memoryTracing();

    const output = await runAgent(Orchestrator, { messages: [human("What is the answer?")] }, { tracer: tracing.tracer });
    expect(output.status).toBe("succeeded");
    const spans = tracing.spans();
    const searcher = one(spans, "invoke_agent Searcher");
    expect(searcher.status.code).toBe(SpanStatusCode.ERROR);
    expect(searcher.attributes).toMatchObject({ "jianmu.run.status": "failed", "error.type": "modelError" });
    expect(isChildOf(searcher, one(spans, "execute_tool ask_searcher"))).toBe(true);
    expect(one(spans, "invoke_agent Orchestrator").status.code).toBe(SpanStatusCode.UNSET);
    expectNoKey(spans);
  });

  it("a run restored while the agent two levels down waits gets the nested spans again in a new trace, linked to the first", async () => {
    const { Orchestrator, servers: used } = await threeLevels();

    const first = memoryTracing();
    const actor = createActor(Orchestrator, { input: { messages: [human("What is the answer? Save it.")] } });
    const traced = traceAgent(actor, { tracer: first.tracer });
    actor.start();
    const waiting = await waitFor(actor, awaiting);
    expect(pendingApprovals(waiting).map((p) => p.agentPath)).toEqual([
      [
        { agent: "Researcher", callId: "call_research_1" },
        { agent: "Searcher", callId: "call_search_1" },
      ],
    ]);
    const saved = JSON.stringify(persistAgent(actor));
    actor.stop();
    const firstRun = one(first.spans(), "invoke_agent Orchestrator");
    expect(firstRun.attributes["jianmu.run.suspended"]).toBe(true);
    expect(first.spans().every((span) => span.ended)).toBe(true);

    const second = memoryTracing();
    const output = await runAgent(Orchestrator, {}, { snapshot: restoreAgent(Orchestrator, saved), tracer: second.tracer, onApproval: () => ({ approve: true }) });
    expect(output.status).toBe("succeeded");
    // Each model was called exactly as scripted across both processes.
    expect([used.orchestrator.requests.length, used.researcher.requests.length, used.searcher.requests.length]).toEqual([2, 2, 2]);

    const spans = second.spans();
    const run = one(spans, "invoke_agent Orchestrator");
    expect(run.links.map((link) => link.context.spanId)).toEqual([traced.firstTrace!.spanId]);
    expect(run.links[0]!.context.traceId).toBe(firstRun.spanContext().traceId);
    expect(tree(spans)).toEqual([
      "invoke_agent Orchestrator",
      "  execute_tool ask_researcher",
      "    invoke_agent Researcher",
      "      execute_tool ask_searcher",
      "        invoke_agent Searcher",
      "          awaiting_approval",
      "          execute_tool save_note",
      "          chat gpt-4o-mini",
      "      chat gpt-4o-mini",
      "  chat gpt-4o-mini",
    ]);
    expect(one(spans, "awaiting_approval").attributes).toMatchObject({ "gen_ai.tool.call.id": "call_save_1", "jianmu.approval.decision": "approved" });
    expect(spans.every((span) => span.spanContext().traceId === run.spanContext().traceId)).toBe(true);
    expectNoKey([...first.spans(), ...spans]);
  });

  it("shows a handoff as the handoff call's execute_tool span with the other agent under it, and an agent.handoff event on the run", async () => {
    const specialistEndpoint = await endpoint(textTurn("Specialist: your refund is on its way.", { promptTokens: 30, completionTokens: 10 }));
    const triageEndpoint = await endpoint(toolCallTurn([{ id: "call_handoff_1", name: "transfer_to_Specialist", args: {} }], { promptTokens: 20, completionTokens: 5 }));
    const specialist = createReactMachine({ name: "Specialist", modelClient: specialistEndpoint.modelClient, configFile: false });
    const triage = createReactMachine({ name: "Triage", modelClient: triageEndpoint.modelClient, tools: [handoff(specialist)], configFile: false });
    const tracing = memoryTracing();

    const output = await runAgent(triage, { messages: [human("I want a refund")] }, { tracer: tracing.tracer });
    expect(output.finalAnswer).toBe("Specialist: your refund is on its way.");
    const spans = tracing.spans();
    expect(tree(spans)).toEqual([
      "invoke_agent Triage",
      "  chat gpt-4o-mini",
      "  execute_tool transfer_to_Specialist",
      "    invoke_agent Specialist",
      "      chat gpt-4o-mini",
    ]);
    const run = one(spans, "invoke_agent Triage");
    expect(run.events.find((event) => event.name === "agent.handoff")?.attributes).toEqual({
      "gen_ai.tool.call.id": "call_handoff_1",
      "gen_ai.tool.name": "transfer_to_Specialist",
      "jianmu.handoff.from": "Triage",
      "jianmu.handoff.to": "Specialist",
    });
    expect(run.attributes).toMatchObject({ "jianmu.run.status": "succeeded", "gen_ai.usage.input_tokens": 50, "gen_ai.usage.output_tokens": 15 });
    expect(byName(spans, "invoke_agent Specialist")[0]!.attributes["jianmu.run.status"]).toBe("succeeded");
    expect(one(spans, "execute_tool transfer_to_Specialist").attributes).toMatchObject({ "gen_ai.tool.call.id": "call_handoff_1", "jianmu.tool.status": "handoff" });
    expectNoKey(spans);
  });
});
