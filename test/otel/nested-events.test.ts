import { ROOT_CONTEXT, SpanStatusCode } from "@opentelemetry/api";
import type { ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { describe, expect, it } from "vitest";
import type { AgentEmitted } from "../../machines/contract/events.js";
import { RunTracer, type AgentPathEntry, type TracedEvent } from "../../otel/run-tracer.js";
import { isChildOf, memoryTracing, one } from "./helpers.js";

/*
 * The contract with agent-as-tool: a nested agent's telemetry is re-emitted by its parent with
 * `agentPath` (outermost first; each `callId` is the call, one level up, that started that agent).
 * These tests feed such events to the tracer as the parent's actor would deliver them.
 */

const USAGE = { promptTokens: 10, completionTokens: 5, totalTokens: 15 };

function feeder(tracer: RunTracer) {
  let clock = 1_800_000_000_000;
  return (agent: string, path: AgentPathEntry[], event: Record<string, unknown> & { type: AgentEmitted["type"] }) => {
    clock += 10;
    const full = { agent, runId: `run-${agent}`, iteration: 0, timestamp: clock, ...event, ...(path.length > 0 ? { agentPath: path } : {}) };
    tracer.handle(full as unknown as TracedEvent);
  };
}

function modelCall(send: ReturnType<typeof feeder>, agent: string, path: AgentPathEntry[], finishReason: string) {
  send(agent, path, { type: "reply.started", round: 1 });
  send(agent, path, { type: "model.call.started", attempt: 1, model: "gpt-4o-mini", endpoint: "http://127.0.0.1:9/v1" });
  send(agent, path, { type: "model.call.completed", attempt: 1, model: "gpt-4o-mini", endpoint: "http://127.0.0.1:9/v1", usage: USAGE, finishReason, durationMs: 5 });
  send(agent, path, { type: "reply.completed", round: 1, toolCalls: finishReason === "tool_calls" ? 1 : 0, finishReason, usage: USAGE, model: "gpt-4o-mini" });
}

function newTracer() {
  const tracing = memoryTracing();
  const tracer = new RunTracer({
    tracer: tracing.tracer,
    captureContent: false,
    redact: (text) => text,
    parent: ROOT_CONTEXT,
    agent: "Orchestrator",
    runId: "run-Orchestrator",
    startTime: 1_800_000_000_000,
    links: [],
    restored: false,
  });
  return { tracing, tracer, send: feeder(tracer) };
}

function childrenOf(spans: readonly ReadableSpan[], parent: ReadableSpan): string[] {
  return spans.filter((span) => isChildOf(span, parent)).map((span) => span.name).sort();
}

describe("nested agents (events with agentPath)", () => {
  it("nest invoke_agent {child} under the parent's execute_tool span, two levels deep, with the child's spans under it", () => {
    const { tracing, send } = newTracer();
    const researcher: AgentPathEntry[] = [{ agent: "Researcher", callId: "call_research_1" }];
    const searcher: AgentPathEntry[] = [...researcher, { agent: "Searcher", callId: "call_search_1" }];

    modelCall(send, "Orchestrator", [], "tool_calls");
    send("Orchestrator", [], { type: "tool.call.started", callId: "call_research_1", name: "research", arguments: "{}" });
    modelCall(send, "Researcher", researcher, "tool_calls");
    // The grandchild reports before its own call's start reaches the child's level (progress is batched).
    modelCall(send, "Searcher", searcher, "stop");
    send("Searcher", searcher, { type: "loop.terminated", status: "succeeded", rounds: 1, usage: USAGE });
    send("Researcher", researcher, { type: "tool.call.started", callId: "call_search_1", name: "search", arguments: "{}" });
    send("Researcher", researcher, { type: "tool.call.completed", callId: "call_search_1", name: "search", durationMs: 30, output: "found" });
    send("Researcher", researcher, { type: "guard.approval.requested", callId: "call_write_1", name: "write", arguments: "{}", reason: "writes need a person" });
    send("Researcher", researcher, { type: "guard.approval.decided", callId: "call_write_1", name: "write", decision: "approved", edited: false });
    send("Researcher", researcher, { type: "tool.call.started", callId: "call_write_1", name: "write", arguments: "{}" });
    send("Researcher", researcher, { type: "tool.call.completed", callId: "call_write_1", name: "write", durationMs: 5, output: "ok" });
    send("Researcher", researcher, { type: "loop.terminated", status: "succeeded", rounds: 2, usage: USAGE });
    send("Orchestrator", [], { type: "tool.call.completed", callId: "call_research_1", name: "research", durationMs: 300, output: "report" });
    modelCall(send, "Orchestrator", [], "stop");
    send("Orchestrator", [], { type: "loop.terminated", status: "succeeded", rounds: 2, usage: USAGE });

    const spans = tracing.spans();
    expect(spans.every((span) => span.ended)).toBe(true);
    const traceIds = new Set(spans.map((span) => span.spanContext().traceId));
    expect(traceIds.size).toBe(1);

    const root = one(spans, "invoke_agent Orchestrator");
    expect(root.parentSpanContext).toBeUndefined();
    expect(childrenOf(spans, root)).toEqual(["chat gpt-4o-mini", "chat gpt-4o-mini", "execute_tool research"]);

    const research = one(spans, "execute_tool research");
    expect(childrenOf(spans, research)).toEqual(["invoke_agent Researcher"]);
    const researcherSpan = one(spans, "invoke_agent Researcher");
    expect(researcherSpan.attributes).toMatchObject({
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.agent.name": "Researcher",
      "gen_ai.tool.call.id": "call_research_1",
      "jianmu.agent.path": ["Orchestrator", "Researcher"],
      "jianmu.run.status": "succeeded",
    });
    expect(childrenOf(spans, researcherSpan)).toEqual(["awaiting_approval", "chat gpt-4o-mini", "execute_tool search", "execute_tool write"]);

    // Opened by the grandchild's first event, named when its start arrived.
    const search = one(spans, "execute_tool search");
    expect(search.attributes).toMatchObject({ "gen_ai.tool.name": "search", "gen_ai.tool.call.id": "call_search_1", "jianmu.tool.status": "completed" });
    expect(childrenOf(spans, search)).toEqual(["invoke_agent Searcher"]);
    const searcherSpan = one(spans, "invoke_agent Searcher");
    expect(searcherSpan.attributes["jianmu.agent.path"]).toEqual(["Orchestrator", "Researcher", "Searcher"]);
    expect(childrenOf(spans, searcherSpan)).toEqual(["chat gpt-4o-mini"]);

    expect(one(spans, "awaiting_approval").attributes).toMatchObject({ "gen_ai.tool.call.id": "call_write_1", "jianmu.approval.decision": "approved" });
  });

  it("records a nested agent's failure on its own span, and ends a nested agent whose end was never reported with its call", () => {
    const { tracing, send } = newTracer();
    const failing: AgentPathEntry[] = [{ agent: "Writer", callId: "call_write_1" }];
    const silent: AgentPathEntry[] = [{ agent: "Reviewer", callId: "call_review_1" }];

    modelCall(send, "Orchestrator", [], "tool_calls");
    send("Orchestrator", [], { type: "tool.call.started", callId: "call_write_1", name: "write", arguments: "{}" });
    send("Orchestrator", [], { type: "tool.call.started", callId: "call_review_1", name: "review", arguments: "{}" });
    send("Writer", failing, { type: "reply.started", round: 1 });
    send("Writer", failing, { type: "model.call.started", attempt: 1, model: "gpt-4o-mini", endpoint: "http://127.0.0.1:9/v1" });
    send("Writer", failing, { type: "model.call.failed", attempt: 1, model: "gpt-4o-mini", endpoint: "http://127.0.0.1:9/v1", status: 500, message: "upstream broke", willRetry: false, durationMs: 3 });
    send("Writer", failing, { type: "loop.terminated", status: "failed", reason: "modelError", rounds: 0, usage: USAGE });
    send("Orchestrator", [], { type: "tool.call.failed", callId: "call_write_1", name: "write", durationMs: 50, error: "the Writer agent failed: upstream broke", errorKind: "threw" });
    // The reviewer starts a model call but its end never arrives before its call completes.
    send("Reviewer", silent, { type: "reply.started", round: 1 });
    send("Reviewer", silent, { type: "model.call.started", attempt: 1, model: "gpt-4o-mini", endpoint: "http://127.0.0.1:9/v1" });
    send("Orchestrator", [], { type: "tool.call.completed", callId: "call_review_1", name: "review", durationMs: 80, output: "looks fine" });
    send("Orchestrator", [], { type: "loop.terminated", status: "succeeded", rounds: 1, usage: USAGE });

    const spans = tracing.spans();
    expect(spans.every((span) => span.ended)).toBe(true);
    const writer = one(spans, "invoke_agent Writer");
    expect(writer.status).toEqual({ code: SpanStatusCode.ERROR, message: "upstream broke" });
    expect(writer.attributes["error.type"]).toBe("modelError");
    expect(isChildOf(writer, one(spans, "execute_tool write"))).toBe(true);
    expect(one(spans, "execute_tool write").status.code).toBe(SpanStatusCode.ERROR);

    const reviewer = one(spans, "invoke_agent Reviewer");
    expect(isChildOf(reviewer, one(spans, "execute_tool review"))).toBe(true);
    expect(reviewer.attributes).not.toHaveProperty("jianmu.run.status");
    expect(one(spans, "invoke_agent Orchestrator").status.code).toBe(SpanStatusCode.UNSET);
  });

  it("opens one awaiting_approval span per waiting call even when the request is reported twice", () => {
    const { tracing, send } = newTracer();
    const child: AgentPathEntry[] = [{ agent: "Writer", callId: "call_write_1" }];
    send("Orchestrator", [], { type: "tool.call.started", callId: "call_write_1", name: "write", arguments: "{}" });
    send("Writer", child, { type: "guard.approval.requested", callId: "call_save_1", name: "save", arguments: "{}" });
    send("Writer", child, { type: "guard.approval.requested", callId: "call_save_1", name: "save", arguments: "{}" });
    send("Writer", child, { type: "guard.approval.decided", callId: "call_save_1", name: "save", decision: "rejected", edited: false, reason: "no" });
    send("Orchestrator", [], { type: "loop.terminated", status: "succeeded", rounds: 1, usage: USAGE });
    const approvals = tracing.spans().filter((span) => span.name === "awaiting_approval");
    expect(approvals).toHaveLength(1);
    expect(approvals[0]!.attributes).toMatchObject({ "jianmu.approval.decision": "rejected", "jianmu.approval.reason": "no" });
    expect(isChildOf(approvals[0]!, one(tracing.spans(), "invoke_agent Writer"))).toBe(true);
  });
});
