import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { afterEach, describe, expect, it } from "vitest";
import { createActor, toPromise } from "xstate";
import { human } from "../../actors/messages.js";
import { requireApproval } from "../../actors/guards/index.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { runAgent } from "../../machines/runner.js";
import { traceAgent } from "../../otel.js";
import { ModelClient } from "../../index.js";
import { replies, startOpenAIServer, type OpenAIServer } from "../../testing/openai-server.js";
import { responsesTextTurn, responsesToolCallTurn } from "../../testing/responses-turns.js";
import { scriptedTurns } from "../../testing/turns.js";
import { retriedTool } from "../core/helpers.js";
import {
  addTool,
  API_KEY,
  brokenTool,
  byName,
  expectNoKey,
  isChildOf,
  memoryTracing,
  one,
  saveNoteTool,
  scriptedEndpoint,
  textTurn,
  toolCallTurn,
} from "./helpers.js";

const servers: OpenAIServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function endpoint(...turns: Parameters<typeof scriptedEndpoint>[0]) {
  const made = await scriptedEndpoint(turns);
  servers.push(made.server);
  return made;
}

describe("runAgent(..., { tracer })", () => {
  it("makes invoke_agent, chat and execute_tool spans with the GenAI attributes, nested under the run", async () => {
    const { modelClient, server } = await endpoint(
      toolCallTurn([{ id: "call_add_1", name: "add", args: { a: 2, b: 3 } }], { promptTokens: 120, completionTokens: 14 }),
      textTurn("The sum is 5.", { promptTokens: 160, completionTokens: 6 }),
    );
    const machine = createReactMachine({ name: "Adder", modelClient, tools: [addTool], configFile: false });
    const tracing = memoryTracing();

    const output = await runAgent(machine, { messages: [human("What is 2 + 3?")] }, { tracer: tracing.tracer });
    expect(output.status).toBe("succeeded");
    const spans = tracing.spans();

    const run = one(spans, "invoke_agent Adder");
    expect(run.kind).toBe(SpanKind.INTERNAL);
    expect(run.parentSpanContext).toBeUndefined();
    expect(run.attributes).toMatchObject({
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.agent.name": "Adder",
      "jianmu.run.id": output.runId,
      "jianmu.run.status": "succeeded",
      "jianmu.run.rounds": 2,
      "gen_ai.usage.input_tokens": 280,
      "gen_ai.usage.output_tokens": 20,
    });
    expect(run.status.code).toBe(SpanStatusCode.UNSET);

    const chats = byName(spans, "chat gpt-4o-mini");
    expect(chats).toHaveLength(2);
    const port = Number(new URL(server.baseURL).port);
    expect(chats.map((chat) => chat.attributes)).toEqual([
      expect.objectContaining({
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.response.model": "gpt-4o-mini",
        "gen_ai.usage.input_tokens": 120,
        "gen_ai.usage.output_tokens": 14,
        "gen_ai.response.finish_reasons": ["tool_calls"],
        "server.address": "127.0.0.1",
        "server.port": port,
        "jianmu.round": 1,
      }),
      expect.objectContaining({ "gen_ai.usage.input_tokens": 160, "gen_ai.usage.output_tokens": 6, "gen_ai.response.finish_reasons": ["stop"], "jianmu.round": 2 }),
    ]);
    for (const chat of chats) {
      expect(chat.kind).toBe(SpanKind.CLIENT);
      expect(isChildOf(chat, run)).toBe(true);
    }

    const tool = one(spans, "execute_tool add");
    expect(isChildOf(tool, run)).toBe(true);
    expect(tool.attributes).toMatchObject({
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": "add",
      "gen_ai.tool.call.id": "call_add_1",
      "gen_ai.tool.type": "function",
      "jianmu.tool.status": "completed",
    });
    // The tool ran between the two model calls.
    expect(hr(tool.startTime)).toBeGreaterThanOrEqual(hr(chats[0]!.endTime));
    expect(hr(chats[1]!.startTime)).toBeGreaterThanOrEqual(hr(tool.endTime));

    // The server reported no token details: no detail attribute says 0 for it.
    for (const span of [run, ...chats]) {
      expect(span.attributes).not.toHaveProperty("gen_ai.usage.cache_read.input_tokens");
      expect(span.attributes).not.toHaveProperty("gen_ai.usage.reasoning.output_tokens");
    }

    // Content is off by default.
    for (const span of spans) {
      for (const key of ["gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.call.arguments", "gen_ai.tool.call.result"]) expect(span.attributes).not.toHaveProperty(key);
    }
    expectNoKey(spans);
  });

  it("puts the cached and reasoning token counts a server reports (Responses API) on the chat spans and the run's", async () => {
    const server = await startOpenAIServer({
      respond: scriptedTurns([
        responsesToolCallTurn([{ id: "call_add_1", name: "add", args: { a: 2, b: 3 } }], { promptTokens: 120, completionTokens: 64, reasoningTokens: 50, cachedPromptTokens: 0 }, { reasoning: { summary: ["Add them."] } }),
        responsesTextTurn("The sum is 5.", { promptTokens: 200, completionTokens: 6, reasoningTokens: 0, cachedPromptTokens: 128 }),
      ]).respond,
    });
    servers.push(server);
    const modelClient = ModelClient.resolve({ baseURL: server.baseURL, apiKey: API_KEY, model: "gpt-5-mini", api: "responses", reasoning: { effort: "low", summary: "auto" } });
    const tracing = memoryTracing();
    const output = await runAgent(createReactMachine({ name: "Adder", modelClient, tools: [addTool], configFile: false }), { messages: [human("What is 2 + 3?")] }, { tracer: tracing.tracer });
    expect(output.usage).toEqual({ promptTokens: 320, completionTokens: 70, totalTokens: 390, reasoningTokens: 50, cachedPromptTokens: 128 });
    const spans = tracing.spans();
    expect(byName(spans, "chat gpt-5-mini").map((chat) => chat.attributes)).toEqual([
      expect.objectContaining({ "gen_ai.usage.input_tokens": 120, "gen_ai.usage.output_tokens": 64, "gen_ai.usage.cache_read.input_tokens": 0, "gen_ai.usage.reasoning.output_tokens": 50 }),
      expect.objectContaining({ "gen_ai.usage.input_tokens": 200, "gen_ai.usage.output_tokens": 6, "gen_ai.usage.cache_read.input_tokens": 128, "gen_ai.usage.reasoning.output_tokens": 0 }),
    ]);
    expect(one(spans, "invoke_agent Adder").attributes).toMatchObject({
      "gen_ai.usage.input_tokens": 320,
      "gen_ai.usage.output_tokens": 70,
      "gen_ai.usage.cache_read.input_tokens": 128,
      "gen_ai.usage.reasoning.output_tokens": 50,
    });
  });

  it("puts each call's cost and the run's on the spans, cached tokens at the cached price (config.pricing)", async () => {
    const server = await startOpenAIServer({
      respond: scriptedTurns([
        responsesToolCallTurn([{ id: "call_add_1", name: "add", args: { a: 2, b: 3 } }], { promptTokens: 120, completionTokens: 64, reasoningTokens: 50, cachedPromptTokens: 0 }),
        responsesTextTurn("The sum is 5.", { promptTokens: 200, completionTokens: 6, reasoningTokens: 0, cachedPromptTokens: 128 }),
      ]).respond,
    });
    servers.push(server);
    const modelClient = ModelClient.resolve({ baseURL: server.baseURL, apiKey: API_KEY, model: "gpt-5-mini", api: "responses" });
    const tracing = memoryTracing();
    const pricing = { "gpt-5-mini": { input: 1, output: 10, cachedInput: 0.25 } };
    const output = await runAgent(createReactMachine({ name: "Adder", modelClient, tools: [addTool], config: { pricing }, configFile: false }), { messages: [human("What is 2 + 3?")] }, { tracer: tracing.tracer });
    // Reasoning tokens are completion tokens (priced as output); cached prompt tokens at cachedInput.
    const first = (120 * 1 + 64 * 10) / 1_000_000;
    const second = (72 * 1 + 128 * 0.25 + 6 * 10) / 1_000_000;
    expect(output.usage.cost).toBeCloseTo(first + second, 15);
    const costs = byName(tracing.spans(), "chat gpt-5-mini").map((chat) => chat.attributes["jianmu.usage.cost"] as number);
    expect(costs[0]).toBeCloseTo(first, 15);
    expect(costs[1]).toBeCloseTo(second, 15);
    expect(one(tracing.spans(), "invoke_agent Adder").attributes["jianmu.usage.cost"]).toBeCloseTo(first + second, 15);
  });

  it("records content only when asked to, and never the key", async () => {
    const { modelClient } = await endpoint(
      toolCallTurn([{ id: "call_add_1", name: "add", args: { a: 2, b: 3 } }]),
      textTurn("The sum is 5."),
    );
    const machine = createReactMachine({ modelClient, tools: [addTool], configFile: false });
    const tracing = memoryTracing();

    await runAgent(machine, { messages: [human("What is 2 + 3?")] }, { tracer: tracing.tracer, traceContent: true });
    const spans = tracing.spans();
    const tool = one(spans, "execute_tool add");
    expect(tool.attributes["gen_ai.tool.call.arguments"]).toBe('{"a":2,"b":3}');
    expect(tool.attributes["gen_ai.tool.call.result"]).toBe("5");
    const [first, answer] = byName(spans, "chat gpt-4o-mini");
    expect(JSON.parse(String(answer!.attributes["gen_ai.output.messages"]))).toEqual([
      { role: "assistant", parts: [{ type: "text", content: "The sum is 5." }], finish_reason: "stop" },
    ]);
    // What each call was sent: the conversation so far, in the conventions' parts.
    expect(JSON.parse(String(first!.attributes["gen_ai.input.messages"]))).toEqual([{ role: "user", parts: [{ type: "text", content: "What is 2 + 3?" }] }]);
    expect(JSON.parse(String(answer!.attributes["gen_ai.input.messages"]))).toEqual([
      { role: "user", parts: [{ type: "text", content: "What is 2 + 3?" }] },
      { role: "assistant", parts: [{ type: "tool_call", id: "call_add_1", name: "add", arguments: '{"a":2,"b":3}' }] },
      { role: "tool", parts: [{ type: "tool_call_response", id: "call_add_1", response: "5" }] },
    ]);
    expectNoKey(spans);
  });

  it("makes an awaiting_approval span per waiting call, with the decision; a rejected call's execute_tool says so", async () => {
    const { modelClient } = await endpoint(
      toolCallTurn([
        { id: "call_note_1", name: "save_note", args: { text: "buy milk" } },
        { id: "call_note_2", name: "save_note", args: { text: "sell the house" } },
      ]),
      textTurn("Saved one note; the other was refused."),
    );
    const machine = createReactMachine({ modelClient, tools: [saveNoteTool], constraints: [requireApproval({ effectTags: ["writes"] })], configFile: false });
    const tracing = memoryTracing();

    const output = await runAgent(machine, { messages: [human("Save my notes.")] }, {
      tracer: tracing.tracer,
      onApproval: (request) => (request.callId === "call_note_1" ? { approve: true } : { approve: false, reason: "not that one" }),
    });
    expect(output.status).toBe("succeeded");
    const spans = tracing.spans();
    const run = one(spans, "invoke_agent ReActAgent");

    const approvals = byName(spans, "awaiting_approval");
    expect(approvals.map((span) => span.attributes)).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ "gen_ai.tool.name": "save_note", "gen_ai.tool.call.id": "call_note_1", "jianmu.approval.decision": "approved", "jianmu.approval.edited": false }),
        expect.objectContaining({ "gen_ai.tool.call.id": "call_note_2", "jianmu.approval.decision": "rejected", "jianmu.approval.reason": "not that one" }),
      ]),
    );
    expect(approvals).toHaveLength(2);
    for (const span of approvals) expect(isChildOf(span, run)).toBe(true);

    const tools = byName(spans, "execute_tool save_note");
    const status = Object.fromEntries(tools.map((span) => [span.attributes["gen_ai.tool.call.id"], span.attributes["jianmu.tool.status"]]));
    expect(status).toEqual({ call_note_1: "completed", call_note_2: "rejected" });
    // The approved call ran after its approval.
    const approved = tools.find((span) => span.attributes["gen_ai.tool.call.id"] === "call_note_1")!;
    const itsApproval = approvals.find((span) => span.attributes["gen_ai.tool.call.id"] === "call_note_1")!;
    expect(hr(approved.startTime)).toBeGreaterThanOrEqual(hr(itsApproval.endTime));
    expectNoKey(spans);
  });

  it("marks a failed tool call's span ERROR with an exception event; the run itself goes on", async () => {
    const { modelClient } = await endpoint(
      toolCallTurn([{ id: "call_lookup_1", name: "lookup", args: { query: "weather" } }]),
      textTurn("The lookup failed, sorry."),
    );
    const machine = createReactMachine({ modelClient, tools: [brokenTool], configFile: false });
    const tracing = memoryTracing();

    const output = await runAgent(machine, { messages: [human("Look up the weather.")] }, { tracer: tracing.tracer });
    expect(output.status).toBe("succeeded");
    const spans = tracing.spans();
    const tool = one(spans, "execute_tool lookup");
    expect(tool.status.code).toBe(SpanStatusCode.ERROR);
    expect(tool.status.message).toContain("refused the connection");
    expect(tool.attributes).toMatchObject({ "jianmu.tool.status": "failed", "error.type": "threw", "gen_ai.tool.call.id": "call_lookup_1" });
    const exception = tool.events.find((event) => event.name === "exception");
    expect(exception?.attributes).toMatchObject({ "exception.type": "threw", "exception.message": expect.stringContaining("refused the connection") });
    expect(one(spans, "invoke_agent ReActAgent").status.code).toBe(SpanStatusCode.UNSET);
    expectNoKey(spans);
  });

  it("keeps a retried tool call in one execute_tool span, with an event per failed attempt; the span ends with the attempt that answered", async () => {
    const { modelClient } = await endpoint(toolCallTurn([{ id: "call_rate_1", name: "rate", args: {} }]), textTurn("1.08"));
    const rate = retriedTool("rate", [new Error("the rates service answered 503 (1)"), new Error("the rates service answered 503 (2)"), "1.08"], { retries: 2, retryDelayMs: 1 }).tool;
    const tracing = memoryTracing();
    const output = await runAgent(createReactMachine({ modelClient, tools: [rate], configFile: false }), { messages: [human("Rate?")] }, { tracer: tracing.tracer });
    expect(output.status).toBe("succeeded");
    const tool = one(tracing.spans(), "execute_tool rate");
    expect(tool.status.code).toBe(SpanStatusCode.UNSET);
    expect(tool.attributes).toMatchObject({ "jianmu.tool.status": "completed" });
    const retries = tool.events.filter((event) => event.name === "tool.call.retrying");
    expect(retries.map((event) => event.attributes)).toEqual([
      { "jianmu.tool.attempt": 1, "jianmu.tool.attempts": 3, "jianmu.tool.retry_delay_ms": 1, "error.type": "threw", "jianmu.tool.error": "rate failed: the rates service answered 503 (1)" },
      { "jianmu.tool.attempt": 2, "jianmu.tool.attempts": 3, "jianmu.tool.retry_delay_ms": 2, "error.type": "threw", "jianmu.tool.error": "rate failed: the rates service answered 503 (2)" },
    ]);
  });

  it("marks a failed model call and the failed run ERROR, and the server's echo of the key never reaches a span", async () => {
    const { modelClient } = await endpoint(
      // What OpenAI answers to a bad key: it quotes part of it.
      replies.error(401, `Incorrect API key provided: sk-test-otel-NEVER-IN-A-SPAN-3b9e7c1d5a. You can find your API key at https://platform.openai.com.`, {
        code: "invalid_api_key",
      }),
    );
    const machine = createReactMachine({ modelClient, configFile: false });
    const tracing = memoryTracing();

    const output = await runAgent(machine, { messages: [human("Hello?")] }, { tracer: tracing.tracer });
    expect(output.status).toBe("failed");
    expect(output.termination?.reason).toBe("modelError");
    const spans = tracing.spans();

    const chats = byName(spans, "chat gpt-4o-mini");
    expect(chats.length).toBeGreaterThanOrEqual(1);
    const last = chats.at(-1)!;
    expect(last.status.code).toBe(SpanStatusCode.ERROR);
    expect(last.attributes).toMatchObject({ "jianmu.model.will_retry": false, "error.type": "invalid_api_key" });
    expect(last.events.some((event) => event.name === "exception")).toBe(true);

    const run = one(spans, "invoke_agent ReActAgent");
    expect(run.status.code).toBe(SpanStatusCode.ERROR);
    expect(run.attributes).toMatchObject({ "jianmu.run.status": "failed", "error.type": "modelError" });
    const exception = run.events.find((event) => event.name === "exception");
    expect(exception?.attributes?.["exception.message"]).toContain("Incorrect API key provided");
    expectNoKey(spans);
  });

  it("gives each attempt of a retried model call its own chat span; only the failed one is ERROR", async () => {
    const { modelClient } = await endpoint(replies.error(503, "the model is overloaded, try again"), textTurn("Here I am."));
    const machine = createReactMachine({ modelClient, configFile: false });
    const tracing = memoryTracing();

    const output = await runAgent(machine, { messages: [human("Hello?")] }, { tracer: tracing.tracer });
    expect(output.status).toBe("succeeded");
    const spans = tracing.spans();
    const chats = byName(spans, "chat gpt-4o-mini");
    expect(chats.map((chat) => [chat.attributes["jianmu.model.attempt"], chat.status.code, chat.attributes["error.type"], chat.attributes["jianmu.model.will_retry"]])).toEqual([
      [1, SpanStatusCode.ERROR, "503", true],
      [2, SpanStatusCode.UNSET, undefined, undefined],
    ]);
    expect(chats[1]!.attributes["gen_ai.response.finish_reasons"]).toEqual(["stop"]);
    expect(one(spans, "invoke_agent ReActAgent").status.code).toBe(SpanStatusCode.UNSET);
  });

  it("ends a cancelled run's span ERROR (cancelled) and the wait it cut short undecided", async () => {
    const { modelClient } = await endpoint(toolCallTurn([{ id: "call_note_1", name: "save_note", args: { text: "x" } }]));
    const machine = createReactMachine({ modelClient, tools: [saveNoteTool], constraints: [requireApproval({ tools: ["save_note"] })], configFile: false });
    const tracing = memoryTracing();
    const controller = new AbortController();

    const output = await runAgent(machine, { messages: [human("Save x.")] }, {
      tracer: tracing.tracer,
      signal: controller.signal,
      // Nobody answers: the caller gives up instead.
      onApproval: () => {
        controller.abort();
        return new Promise(() => {});
      },
    });
    expect(output.termination?.reason).toBe("cancelled");
    const spans = tracing.spans();
    const run = one(spans, "invoke_agent ReActAgent");
    expect(run.status.code).toBe(SpanStatusCode.ERROR);
    expect(run.attributes).toMatchObject({ "error.type": "cancelled", "jianmu.run.status": "failed" });
    expect(one(spans, "awaiting_approval").attributes["jianmu.approval.decision"]).toBe("undecided");
    expect(byName(spans, "execute_tool save_note")).toEqual([]);
    expect(spans.every((span) => span.ended)).toBe(true);
  });

  it("nests the run under the caller's span when one is given", async () => {
    const { modelClient } = await endpoint(textTurn("Hi."));
    const machine = createReactMachine({ modelClient, configFile: false });
    const tracing = memoryTracing();
    const request = tracing.tracer.startSpan("POST /chat");

    const actor = createActor(machine, { input: { messages: [human("Hello")] } });
    // Without a registered context manager the active context is empty: `parent` says where the run belongs.
    traceAgent(actor, { tracer: tracing.tracer, parent: trace.setSpan(ROOT_CONTEXT, request) });
    actor.start();
    await toPromise(actor);
    request.end();

    const spans = tracing.spans();
    expect(isChildOf(one(spans, "invoke_agent ReActAgent"), one(spans, "POST /chat"))).toBe(true);
  });
});

function hr(time: [number, number]): number {
  return time[0] * 1e9 + time[1];
}
