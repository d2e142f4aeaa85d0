import { SpanStatusCode } from "@opentelemetry/api";
import { afterEach, describe, expect, it } from "vitest";
import { createActor } from "xstate";
import { requireApproval } from "../../actors/guards/index.js";
import { human } from "../../actors/messages.js";
import { checkpointAgent } from "../../machines/persistence/checkpoints/checkpoint-agent.js";
import { MemoryCheckpointStore } from "../../machines/persistence/checkpoints/memory-store.js";
import { persistAgent, restoreAgent, SnapshotError } from "../../machines/persistence/persistence.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { runAgent } from "../../machines/runner.js";
import { traceAgent } from "../../otel.js";
import type { OpenAIServer } from "../../testing/openai-server.js";
import { awaitingApproval, waitFor } from "../persistence/helpers.js";
import { byName, expectNoKey, isChildOf, memoryTracing, one, saveNoteTool, scriptedEndpoint, textTurn, toolCallTurn } from "./helpers.js";

const servers: OpenAIServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function approvalMachine() {
  const { modelClient, server } = await scriptedEndpoint([
    toolCallTurn([{ id: "call_note_1", name: "save_note", args: { text: "renew the passport" } }]),
    textTurn("Saved your note."),
  ]);
  servers.push(server);
  const store = new MemoryCheckpointStore();
  const machine = createReactMachine({ modelClient, tools: [saveNoteTool], constraints: [requireApproval({ tools: ["save_note"] })], journal: store, configFile: false });
  return { machine, store, server };
}

describe("a restored run's spans", () => {
  it("link to the run's first trace, and the link survives being saved again", async () => {
    const { machine, store, server } = await approvalMachine();

    // The first process: the run waits for approval, is checkpointed and stops.
    const first = memoryTracing();
    const actor = createActor(machine, { input: { messages: [human("Remember to renew my passport.")] } });
    const traced = traceAgent(actor, { tracer: first.tracer });
    checkpointAgent(actor, store);
    actor.start();
    await waitFor(actor, awaitingApproval);
    const runId = actor.getSnapshot().context.loop.runId;
    actor.stop();

    const firstSpans = first.spans();
    const firstRun = one(firstSpans, "invoke_agent ReActAgent");
    expect(firstRun.attributes).toMatchObject({ "jianmu.run.suspended": true, "jianmu.run.id": runId });
    expect(firstRun.attributes).not.toHaveProperty("jianmu.run.status");
    expect(one(firstSpans, "awaiting_approval").attributes).toMatchObject({ "gen_ai.tool.call.id": "call_note_1", "jianmu.approval.decision": "undecided" });
    expect(traced.firstTrace).toEqual({ traceId: firstRun.spanContext().traceId, spanId: firstRun.spanContext().spanId, traceFlags: 1 });

    // What the store holds is plain JSON carrying where the first trace began.
    const saved = store.load(runId)!;
    expect(saved.status).toBe("awaitingApproval");
    expect(saved.snapshot.trace).toEqual(traced.firstTrace);

    // Another process: restore, approve, finish, with another tracer.
    const second = memoryTracing();
    const output = await runAgent(machine, {}, { snapshot: restoreAgent(machine, JSON.stringify(saved)), tracer: second.tracer, checkpoints: store, onApproval: () => ({ approve: true }) });
    expect(output.status).toBe("succeeded");
    expect(server.requests).toHaveLength(2);

    const spans = second.spans();
    const run = one(spans, "invoke_agent ReActAgent");
    expect(run.spanContext().traceId).not.toBe(firstRun.spanContext().traceId);
    expect(run.attributes).toMatchObject({ "jianmu.run.restored": true, "jianmu.run.status": "succeeded", "jianmu.run.id": runId });
    expect(run.links).toEqual([
      { context: expect.objectContaining({ traceId: firstRun.spanContext().traceId, spanId: firstRun.spanContext().spanId }), attributes: { "jianmu.link": "first_trace" } },
    ]);
    // The wait that began in the first process is picked up and decided here.
    const approval = one(spans, "awaiting_approval");
    expect(isChildOf(approval, run)).toBe(true);
    expect(approval.attributes).toMatchObject({ "gen_ai.tool.call.id": "call_note_1", "jianmu.approval.decision": "approved" });
    const tool = one(spans, "execute_tool save_note");
    expect(tool.attributes).toMatchObject({ "jianmu.tool.status": "completed" });
    expect(isChildOf(tool, run)).toBe(true);
    expect(byName(spans, "chat gpt-4o-mini")).toHaveLength(1);
    for (const span of spans) expect(span.spanContext().traceId).toBe(run.spanContext().traceId);

    // Saved again by the restored run: still the first trace, not the second.
    expect(store.load(runId)!.status).toBe("succeeded");
    expect(store.load(runId)!.snapshot.trace).toEqual(traced.firstTrace);
    expectNoKey([...firstSpans, ...spans]);
  });

  it("keeps the first trace in a snapshot saved by an untraced restored run", async () => {
    const { machine } = await approvalMachine();
    const tracing = memoryTracing();
    const actor = createActor(machine, { input: { messages: [human("Note it.")] } });
    const traced = traceAgent(actor, { tracer: tracing.tracer });
    actor.start();
    await waitFor(actor, awaitingApproval);
    const saved = JSON.stringify(persistAgent(actor));
    actor.stop();

    const restored = createActor(machine, { snapshot: restoreAgent(machine, saved) });
    expect(persistAgent(restored).snapshot.trace).toEqual(traced.firstTrace);
    restored.stop();
  });

  it("refuses a snapshot whose trace link is damaged, naming the field", async () => {
    const { machine } = await approvalMachine();
    const actor = createActor(machine, { input: { messages: [human("Note it.")] } });
    traceAgent(actor, { tracer: memoryTracing().tracer });
    actor.start();
    await waitFor(actor, awaitingApproval);
    const saved = persistAgent(actor);
    actor.stop();
    (saved.snapshot.trace as { traceId: string }).traceId = "not-hex";

    expect(() => restoreAgent(machine, saved)).toThrow(SnapshotError);
    expect(() => restoreAgent(machine, saved)).toThrow(/saved\.snapshot\.trace\.traceId must be 32 lowercase hex digits/);
  });

  it("stop() ends every span still open, the run's marked suspended", async () => {
    const { machine } = await approvalMachine();
    const tracing = memoryTracing();
    const actor = createActor(machine, { input: { messages: [human("Note it.")] } });
    const traced = traceAgent(actor, { tracer: tracing.tracer });
    actor.start();
    await waitFor(actor, awaitingApproval);
    traced.stop();
    const run = one(tracing.spans(), "invoke_agent ReActAgent");
    expect(run.attributes["jianmu.run.suspended"]).toBe(true);
    expect(one(tracing.spans(), "awaiting_approval").attributes["jianmu.approval.decision"]).toBe("undecided");
    actor.stop();
    expect(run.status.code).toBe(SpanStatusCode.UNSET);
    expect(tracing.spans().every((span) => span.ended)).toBe(true);
  });
});
