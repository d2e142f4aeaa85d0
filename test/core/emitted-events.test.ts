import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import type { Guard } from "../../actors/guard.js";
import { blocklist, maxLength } from "../../actors/guardrails-builtin.js";
import { human } from "../../actors/messages.js";
import { resolveModelClient } from "../../actors/openai/openai-model-client.js";
import { agentEmittedSchema, EMITTED_TYPES, type AgentEmitted } from "../../machines/contract/events.js";
import { handoff } from "../../machines/composition/handoff.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { runAgent } from "../../machines/runner.js";
import { replies, startOpenAIServer, type OpenAIServer } from "../../testing/openai-server.js";
import { replayRecording } from "../../testing/recordings.js";
import { scriptedModel } from "../../testing/scripted-model.js";
import { defineTool } from "../../tools/tool.js";
import { callTurn, fragmentedCallTurn, loopback, textTurn } from "../output/helpers.js";
import { add, multiply, nextEvent, retriedTool, startAgent } from "./helpers.js";

/*
 * The table of emitted events (machines/contract/emitted.ts) is only worth having if it is true. Real runs
 * (the scripted model, and the `openai` SDK over HTTP to the loopback server with retries and a
 * fallback) emit their events; every one must parse against the table, whose schemas are strict,
 * and together the runs must emit every type the table lists. Nothing parses on the emit path
 * itself: this test is where the table meets the events.
 */

const servers: OpenAIServer[] = [];
afterAll(async () => {
  await Promise.all(servers.map((server) => server.close()));
});

const deleteFile = defineTool({
  name: "delete_file",
  description: "Deletes a file",
  parameters: z.object({ path: z.string() }),
  execute: ({ path }) => `deleted ${path}`,
});
const format = defineTool({
  name: "format_disk",
  description: "Formats the disk",
  parameters: z.object({}),
  execute: () => "formatted",
});
const broken = defineTool({
  name: "broken",
  description: "Always throws",
  parameters: z.object({}),
  execute: () => {
    throw new Error("the tool broke");
  },
});
/** Throws on its first call, answers on the next: its one retry is a tool.call.retrying. */
const flaky = retriedTool("flaky", [new Error("a passing hiccup"), "worked the second time"], { retries: 1, retryDelayMs: 0 }).tool;
const lookup = defineTool({
  name: "lookup",
  description: "Look a record up",
  parameters: z.object({ id: z.number() }),
  execute: ({ id }) => `record ${id}: ${"lorem ipsum dolor sit amet ".repeat(8)}`,
});

const guard: Guard = (call) =>
  call.name === "delete_file" ? { decision: "pending", reason: "deleting needs a human", timeoutMs: 60_000 } : call.name === "format_disk" ? { decision: "deny", reason: "never" } : { decision: "allow" };

/** Tools that run, fail, throw and are retried; a guard that denies one call and holds another; commands that are refused, then a rejection. */
async function toolsAndApprovals(): Promise<AgentEmitted[]> {
  const model = scriptedModel([
    {
      content: "Let me work on it.",
      toolCalls: [
        { id: "c1", name: "multiply", arguments: { a: 6, b: 7 } },
        { id: "c2", name: "broken", arguments: {} },
        { id: "c3", name: "no_such_tool", arguments: {} },
        { id: "c4", name: "format_disk", arguments: {} },
        { id: "c5", name: "delete_file", arguments: { path: "/a" } },
        { id: "c6", name: "flaky", arguments: {} },
      ],
    },
    { content: "Done, without deleting." },
  ]);
  const { actor, events, done } = startAgent(createReactMachine({ modelClient: model, tools: [multiply, broken, deleteFile, format, flaky], constraints: [guard], configFile: false }), {
    messages: [human("clean up")],
  });
  await nextEvent(actor, "guard.approval.requested");
  actor.send({ type: "guard.approve", callId: "not-a-call" });
  actor.send({ type: "agent.cancel", reason: 42 } as never);
  actor.send({ type: "guard.reject", callId: "c5", reason: "keep it" });
  await done;
  return events;
}

const Weather = z.object({ city: z.string(), temperatureC: z.number() });

/** The real client: a 429 retried, a 500 that moves to the fallback model, a final output that streams, is rejected once, then accepted. */
async function retriesFallbackAndOutput(): Promise<AgentEmitted[]> {
  const turns = [
    replies.rateLimited({ ms: 1 }),
    replies.error(500, "the server is having a bad day", { code: "server_busy" }),
    fragmentedCallTurn("call_1", "final_result", ['{"city":"Pa', 'ris","temper', 'atureC":"21"}']),
    callTurn([{ id: "call_2", name: "final_result", arguments: { city: "Paris", temperatureC: 21 } }]),
  ];
  const server = await startOpenAIServer({ respond: (request) => turns[request.index] ?? replies.error(500, `no scripted turn #${request.index + 1}`) });
  servers.push(server);
  const client = resolveModelClient({
    baseURL: server.baseURL,
    apiKey: "test-key",
    model: "test-model",
    resilience: { maxRetries: 1, initialDelayMs: 1, maxDelayMs: 5, jitter: 0 },
    fallbacks: [{ model: "backup-model" }],
  });
  const machine = createReactMachine({ modelClient: client, output: Weather, config: { outputStrategy: "tool" }, configFile: false });
  const events: AgentEmitted[] = [];
  const output = await runAgent(machine, { messages: [human("Weather in Paris?")] }, { onEvent: (event) => events.push(event) });
  expect(output.status).toBe("succeeded");
  return events;
}

/** A model call that fails for good: the run ends as a model error. */
async function modelFailure(): Promise<AgentEmitted[]> {
  const open = await loopback([]);
  servers.push(open.server);
  const events: AgentEmitted[] = [];
  const output = await runAgent(createReactMachine({ modelClient: open.client, configFile: false }), { messages: [human("hi")] }, { onEvent: (event) => events.push(event) });
  expect(output.status).toBe("failed");
  return events;
}

/** A conversation that outgrows its context and is trimmed. */
async function compaction(): Promise<AgentEmitted[]> {
  const open = await loopback([...[1, 2, 3, 4].map((id) => callTurn([{ id: `call_${id}`, name: "lookup", arguments: { id } }])), textTurn(["done"])]);
  servers.push(open.server);
  const machine = createReactMachine({
    modelClient: open.client,
    tools: [lookup],
    config: { maxIterations: 10, context: { maxTokens: 350, strategy: "trim", keepLast: 2 } },
    configFile: false,
  });
  const events: AgentEmitted[] = [];
  await runAgent(machine, { messages: [human("Look up records 1 to 4.")] }, { onEvent: (event) => events.push(event) });
  return events;
}

/** A handoff: the caller's events, and the target's re-emitted with their agentPath. */
async function handoffRun(): Promise<AgentEmitted[]> {
  const specialist = createReactMachine({
    name: "Specialist",
    modelClient: scriptedModel([{ toolCalls: [{ id: "s1", name: "add", arguments: { a: 1, b: 2 } }] }, { content: "It is 3." }]),
    tools: [add],
    configFile: false,
  });
  const triage = createReactMachine({
    name: "Triage",
    modelClient: scriptedModel([{ content: "Passing you on.", toolCalls: [{ id: "h1", name: "transfer_to_Specialist", arguments: {} }] }]),
    tools: [handoff(specialist)],
    configFile: false,
  });
  const events: AgentEmitted[] = [];
  const output = await runAgent(triage, { messages: [human("1 + 2?")] }, { onEvent: (event) => events.push(event) });
  expect(output.status).toBe("succeeded");
  return events;
}

const calculator = defineTool({
  name: "calculator",
  description: "A minimal calculator for basic arithmetic.",
  parameters: z.object({ a: z.number(), b: z.number(), op: z.enum(["add", "subtract", "multiply", "divide"]) }),
  execute: ({ a, b, op }) => (op === "add" ? a + b : op === "subtract" ? a - b : op === "multiply" ? a * b : a / b),
});

/** A reasoning model over the Responses API (a real run recorded by vercel/ai): its reasoning summary streams as reasoning.delta. */
async function responsesReasoning(): Promise<AgentEmitted[]> {
  const recording = fileURLToPath(new URL("../fixtures/openai/vercel-ai/openai-responses/openai-reasoning-encrypted-content.1.chunks.txt", import.meta.url));
  const server = await startOpenAIServer({ respond: replayRecording(recording) });
  servers.push(server);
  const client = resolveModelClient({ baseURL: server.baseURL, apiKey: "test-key", model: "gpt-5.1-codex-max", api: "responses", reasoning: { effort: "high", summary: "detailed" } });
  const events: AgentEmitted[] = [];
  const output = await runAgent(createReactMachine({ modelClient: client, tools: [calculator], configFile: false }), { messages: [human("(12 + 7) * 3 * 10?")] }, { onEvent: (event) => events.push(event) });
  expect(output.status).toBe("succeeded");
  return events;
}

/** Guardrails: an output guardrail sends feedback once, then an input guardrail of a second run trips; the replies are priced. */
async function guardrailRun(): Promise<AgentEmitted[]> {
  const events: AgentEmitted[] = [];
  const onEvent = (event: AgentEmitted) => events.push(event);
  const pricing = { scripted: { input: 1, output: 2 } };
  const strict = createReactMachine({
    modelClient: scriptedModel([{ content: "a very long answer indeed", usage: { promptTokens: 10, completionTokens: 5 } }, { content: "short", usage: { promptTokens: 12, completionTokens: 1 } }]),
    outputGuardrails: [maxLength(10, { onHit: "retry" })],
    config: { pricing },
    configFile: false,
  });
  expect((await runAgent(strict, { messages: [human("answer briefly")] }, { onEvent })).status).toBe("succeeded");
  const blocked = createReactMachine({ modelClient: scriptedModel([]), inputGuardrails: [blocklist(["password"])], configFile: false });
  expect((await runAgent(blocked, { messages: [human("my password is hunter2")] }, { onEvent })).termination?.reason).toBe("guardrailTripped");
  return events;
}


const SCENARIOS = { toolsAndApprovals, retriesFallbackAndOutput, modelFailure, compaction, handoffRun, responsesReasoning, guardrailRun };
const emitted = new Map<keyof typeof SCENARIOS, AgentEmitted[]>();

beforeAll(async () => {
  for (const [name, run] of Object.entries(SCENARIOS) as [keyof typeof SCENARIOS, () => Promise<AgentEmitted[]>][]) emitted.set(name, await run());
});

/** The events that do not fit the table, with what is wrong with each. */
function misfits(events: readonly AgentEmitted[]) {
  return events.flatMap((event) => {
    const parsed = agentEmittedSchema().safeParse(event);
    return parsed.success ? [] : [{ type: event.type, issues: parsed.error.issues.map((issue) => `${issue.path.join(".")}: ${issue.message}`) }];
  });
}

describe("the emitted-event table holds what real runs emit", () => {
  it.each(Object.keys(SCENARIOS))("every event of the %s run fits its schema", (name) => {
    const events = emitted.get(name as keyof typeof SCENARIOS)!;
    expect(events.length).toBeGreaterThan(0);
    expect(misfits(events)).toEqual([]);
  });

  it("together the runs emit every type in EMITTED_TYPES, and no other", () => {
    const seen = new Set([...emitted.values()].flat().map((event) => event.type));
    expect([...seen].sort()).toEqual([...EMITTED_TYPES].sort());
  });

  it("model.call.failed carries kind, code and next, as the table declares", () => {
    const failed = emitted.get("retriesFallbackAndOutput")!.filter((event) => event.type === "model.call.failed");
    expect(failed).toMatchObject([
      { attempt: 1, model: "test-model", status: 429, kind: "http", code: "rate_limit_exceeded", willRetry: true, next: "retry" },
      { attempt: 2, model: "test-model", status: 500, kind: "http", code: "server_busy", willRetry: true, next: "fallback" },
    ]);
    expect(emitted.get("modelFailure")!.filter((event) => event.type === "model.call.failed")).toMatchObject([{ willRetry: false, next: "none" }]);
  });

  it("reasoning.delta carries the reasoning summary as it streamed, before the call completes", () => {
    const events = emitted.get("responsesReasoning")!;
    const deltas = events.filter((event) => event.type === "reasoning.delta");
    expect(deltas.length).toBe(32);
    expect(deltas.map((event) => event.delta).join("")).toMatch(/^\*\*Calculating step-by-step using calculator\*\*\n\nI'll compute 12 plus 7/);
    const firstCompleted = events.findIndex((event) => event.type === "model.call.completed");
    expect(events.indexOf(deltas.at(-1)!)).toBeLessThan(firstCompleted);
  });

  it("nested agents' events carry their agentPath, which the table declares", () => {
    const relayed = emitted.get("handoffRun")!.filter((event) => event.agentPath !== undefined);
    expect(relayed.length).toBeGreaterThan(0);
    for (const event of relayed) expect(event).toMatchObject({ agent: "Specialist", agentPath: [{ agent: "Specialist", callId: "h1" }] });
  });

  it("the schema is built once, on first use", () => {
    expect(agentEmittedSchema()).toBe(agentEmittedSchema());
  });

  it("is strict: a field the table does not declare, or a missing base field, does not fit", () => {
    const failed = emitted.get("retriesFallbackAndOutput")!.find((event) => event.type === "model.call.failed")!;
    expect(agentEmittedSchema().safeParse(failed).success).toBe(true);
    expect(agentEmittedSchema().safeParse({ ...failed, retryAfterMs: 1 }).success).toBe(false);
    const { runId: _runId, ...withoutRunId } = failed;
    expect(agentEmittedSchema().safeParse(withoutRunId).success).toBe(false);
    expect(agentEmittedSchema().safeParse({ ...failed, type: "model.call.exploded" }).success).toBe(false);
  });
});
