import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ErrorBodySchema, RunSnapshotSchema, type IdentifiedRunEvent, type RunSnapshot } from "../../http.js";
import { EventReader, postJson, startStack, tempDir, TASK, type WebStack } from "./helpers.js";

/**
 * agentHandler at the HTTP level: every route and every class of bad request, over Node's http
 * server, with the real openai client calling a loopback model and a SQLite store.
 */

const AWAITING = "Evaluating.ChildRunning.ToolExecutor.AwaitingApproval";
let temp: ReturnType<typeof tempDir>;
let stack: WebStack;

beforeAll(() => {
  temp = tempDir();
});
afterAll(() => temp.remove());
afterEach(async () => {
  await stack?.stop();
});

async function startRun(task = TASK): Promise<{ reader: EventReader; runId: string; response: Response }> {
  const response = await postJson(`${stack.base}/runs`, { agent: "payments", message: task });
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
  const reader = new EventReader(response);
  const started = await reader.until("run.started");
  if (started.type !== "run.started") throw new Error("unreachable");
  return { reader, runId: started.data.runId, response };
}

async function status(runId: string): Promise<RunSnapshot> {
  const response = await fetch(`${stack.base}/runs/${runId}`);
  expect(response.status).toBe(200);
  return RunSnapshotSchema.parse(await response.json());
}

async function expectError(response: Response, status: number, code: string, mentions: RegExp) {
  expect(response.status).toBe(status);
  expect(response.headers.get("content-type")).toMatch(/application\/json/);
  const body = ErrorBodySchema.parse(await response.json());
  expect(body.error.code).toBe(code);
  expect(body.error.message).toMatch(mentions);
  return body;
}

function types(events: readonly IdentifiedRunEvent[]) {
  return events.map((e) => e.type);
}

describe("POST /runs streams the run as server-sent events", () => {
  it("text deltas, state changes, the approval with tool, arguments and reason; then approve → tool result, usage, output", async () => {
    stack = await startStack(join(temp.dir, "stream.db"));
    const { reader, runId } = await startRun();
    // The guard's question first, then the waiting state it leads to.
    const approval = await reader.until("approval.requested");
    await reader.until("state.changed", (e) => e.type === "state.changed" && e.data.path === AWAITING);
    expect(approval.data).toEqual({
      callId: "call_pay_1",
      name: "pay_invoice",
      arguments: JSON.stringify({ invoice: "INV-1042", amountEur: 1250 }),
      reason: "payments need a second pair of eyes",
    });
    const deltas = reader.events.filter((e) => e.type === "text.delta").map((e) => (e.type === "text.delta" ? e.data.delta : ""));
    expect(deltas.join("")).toBe("I found invoice INV-1042 over EUR 1250. I will pay it once you approve.");
    const waiting = await status(runId);
    expect(waiting).toMatchObject({ runId, agent: "payments", status: "awaitingApproval", state: { path: AWAITING }, output: null });
    expect(waiting.pendingApprovals.map((p) => p.callId)).toEqual(["call_pay_1"]);
    expect(waiting.messages.map((m) => m.role)).toEqual(["user", "assistant"]);

    const accepted = await postJson(`${stack.base}/runs/${runId}/events`, { type: "guard.approve", callId: "call_pay_1" });
    expect(accepted.status).toBe(202);
    expect(await accepted.json()).toMatchObject({ runId, status: "running" });

    const events = await reader.rest();
    expect(reader.ended).toBe(true);
    const after = types(events.slice(events.indexOf(approval) + 1));
    for (const type of ["approval.decided", "tool.call.started", "tool.call.completed", "usage", "message", "run.finished"] as const) expect(after).toContain(type);
    const finished = events[events.length - 1]!;
    expect(finished.type).toBe("run.finished");
    if (finished.type !== "run.finished") throw new Error("unreachable");
    expect(finished.data.output).toMatchObject({ status: "succeeded", finalAnswer: "Done: transfer of EUR 1250 for INV-1042 sent.", rounds: 2 });
    expect(finished.data.output.usage.totalTokens).toBe(450);
    // Every event carries an id of this stream, in order.
    const seqs = events.map((e) => Number(e.id.split(".")[1]));
    expect(seqs).toEqual(seqs.map((_, i) => i + 1));
    expect(new Set(events.map((e) => e.id.split(".")[0])).size).toBe(1);
    // The state changes trace the statechart.
    const paths = events.flatMap((e) => (e.type === "state.changed" ? [e.data.path] : []));
    expect(paths).toContain("Evaluating.ChildRunning.AgentLLM");
    expect(paths).toContain("Evaluating.ChildRunning.ToolExecutor.Executing");
    expect(paths[paths.length - 1]).toBe("Succeeded");
    expect(stack.payments).toEqual([{ invoice: "INV-1042", amountEur: 1250 }]);
    expect((await status(runId)).status).toBe("succeeded");
  });

  it("tells each step in causal order: a message before the state change it causes, a state before what begins in it", async () => {
    stack = await startStack(join(temp.dir, "order.db"));
    const { reader, runId } = await startRun();
    await reader.until("approval.requested");
    await postJson(`${stack.base}/runs/${runId}/events`, { type: "guard.approve", callId: "call_pay_1" });
    await reader.rest();
    const events = reader.events;
    const at = (find: (e: IdentifiedRunEvent) => boolean, from = 0) => {
      const index = events.findIndex((e, i) => i >= from && find(e));
      expect(index, "an expected event is missing").toBeGreaterThanOrEqual(0);
      return index;
    };
    const message = (index: number) => at((e) => e.type === "message" && e.data.index === index);
    const state = (path: string, from = 0) => at((e) => e.type === "state.changed" && e.data.path.endsWith(path), from);
    const reply = (round: number) => at((e) => e.type === "reply.started" && e.data.round === round);
    // The assistant's tool call, then the tool executor it leads to.
    expect(message(1)).toBeLessThan(state("ToolExecutor.AwaitingApproval"));
    // The tool's result, then the next model call (its state, then its reply).
    const executing = state("ToolExecutor.Executing");
    const nextLlm = state("ChildRunning.AgentLLM", executing);
    expect(message(2)).toBeLessThan(nextLlm);
    expect(nextLlm).toBeLessThan(reply(2));
    // Each call starts in Executing; each reply in AgentLLM.
    expect(executing).toBeLessThan(at((e) => e.type === "tool.call.started"));
    expect(state("ChildRunning.AgentLLM")).toBeLessThan(reply(1));
  });

  it("a follower that went away does not stop the run", async () => {
    stack = await startStack(join(temp.dir, "detach.db"));
    const { reader, runId } = await startRun();
    await reader.until("approval.requested");
    await reader.close();
    expect((await postJson(`${stack.base}/runs/${runId}/events`, { type: "guard.approve", callId: "call_pay_1" })).status).toBe(202);
    const follow = new EventReader(await fetch(`${stack.base}/runs/${runId}/stream`));
    // Following ends with the run: its last event is the end (or, if it ended first, a snapshot of the end).
    const last = (await follow.rest()).at(-1)!;
    expect(last.type === "run.finished" ? last.data.output.status : last.type === "run.snapshot" ? last.data.status : last.type).toBe("succeeded");
    expect((await status(runId)).status).toBe("succeeded");
    expect(stack.payments).toHaveLength(1);
  });
});

describe("GET /runs/:id/stream follows a run again", () => {
  it("replays exactly what came after Last-Event-ID; without one (or with a foreign one) starts from a snapshot", async () => {
    stack = await startStack(join(temp.dir, "follow.db"));
    const { reader, runId } = await startRun();
    // The last event before the run parks: the state it waits in, after the question that led there.
    const parked = (e: IdentifiedRunEvent) => e.type === "state.changed" && e.data.path === AWAITING;
    await reader.until("state.changed", parked);
    const seen = [...reader.events];
    const cut = seen[2]!;

    const replay = new EventReader(await fetch(`${stack.base}/runs/${runId}/stream`, { headers: { "last-event-id": cut.id } }));
    const replayedPark = await replay.until("state.changed", parked);
    expect(replay.events.map((e) => e.id)).toEqual(seen.slice(3).map((e) => e.id));
    expect(replay.events).toEqual(seen.slice(3));
    expect(replayedPark).toEqual(seen[seen.length - 1]);

    const fresh = new EventReader(await fetch(`${stack.base}/runs/${runId}/stream`));
    const snapshot = await fresh.until("run.snapshot");
    expect(fresh.events).toHaveLength(1);
    if (snapshot.type !== "run.snapshot") throw new Error("unreachable");
    expect(snapshot.id).toBe(seen[seen.length - 1]!.id);
    expect(snapshot.data).toMatchObject({ status: "awaitingApproval", state: { path: AWAITING }, pendingApprovals: [{ callId: "call_pay_1", name: "pay_invoice" }] });
    // The streamed sentence is a message by now, not text still streaming.
    expect(snapshot.data.streamingText).toBe("");
    expect(snapshot.data.messages[1]).toMatchObject({ role: "assistant", content: "I found invoice INV-1042 over EUR 1250. I will pay it once you approve." });

    const foreign = new EventReader(await fetch(`${stack.base}/runs/${runId}/stream?lastEventId=deadbeef.3`));
    expect((await foreign.until("run.snapshot")).type).toBe("run.snapshot");

    // All three followers see the end.
    await postJson(`${stack.base}/runs/${runId}/events`, { type: "guard.approve", callId: "call_pay_1" });
    for (const r of [reader, replay, fresh, foreign]) expect(types(await r.rest()).at(-1)).toBe("run.finished");
    expect(stack.payments).toHaveLength(1);

    // A finished run still streams its snapshot, then ends.
    const late = await new EventReader(await fetch(`${stack.base}/runs/${runId}/stream`)).rest();
    expect(types(late)).toEqual(["run.snapshot"]);
  });
});

describe("POST /runs/:id/events", () => {
  it("guard.reject: the call is denied with the reason and nothing is paid", async () => {
    stack = await startStack(join(temp.dir, "reject.db"));
    const { reader, runId } = await startRun();
    await reader.until("approval.requested");
    expect((await postJson(`${stack.base}/runs/${runId}/events`, { type: "guard.reject", callId: "call_pay_1", reason: "wrong supplier" })).status).toBe(202);
    const denied = await reader.until("tool.call.denied");
    expect(denied.data).toMatchObject({ callId: "call_pay_1", reason: "wrong supplier" });
    const finished = await reader.until("run.finished");
    if (finished.type !== "run.finished") throw new Error("unreachable");
    expect(finished.data.output.finalAnswer).toMatch(/^I did not pay it: .*wrong supplier/);
    expect(stack.payments).toEqual([]);
  });

  it("guard.approve with edited arguments pays what the person wrote; arguments the tool refuses are a 422 and change nothing", async () => {
    stack = await startStack(join(temp.dir, "edit.db"));
    const { reader, runId } = await startRun();
    await reader.until("approval.requested");
    const refused = await postJson(`${stack.base}/runs/${runId}/events`, { type: "guard.approve", callId: "call_pay_1", args: { invoice: "INV-1042", amountEur: -5 } });
    const body = await expectError(refused, 422, "command_refused", /amountEur/);
    expect(body.error.field).toBe("args");
    const still = await status(runId);
    expect(still.status).toBe("awaitingApproval");
    expect(still.pendingApprovals.map((p) => p.callId)).toEqual(["call_pay_1"]);

    expect((await postJson(`${stack.base}/runs/${runId}/events`, { type: "guard.approve", callId: "call_pay_1", args: { invoice: "INV-1042", amountEur: 1200 } })).status).toBe(202);
    const decided = await reader.until("approval.decided");
    expect(decided.data).toMatchObject({ decision: "approved", edited: true });
    await reader.until("run.finished");
    expect(stack.payments).toEqual([{ invoice: "INV-1042", amountEur: 1200 }]);
  });

  it("agent.cancel ends the run failed with reason cancelled", async () => {
    stack = await startStack(join(temp.dir, "cancel.db"));
    const { reader, runId } = await startRun();
    await reader.until("approval.requested");
    expect((await postJson(`${stack.base}/runs/${runId}/events`, { type: "agent.cancel", reason: "changed my mind" })).status).toBe(202);
    const finished = await reader.until("run.finished");
    if (finished.type !== "run.finished") throw new Error("unreachable");
    expect(finished.data.output).toMatchObject({ status: "failed", termination: { reason: "cancelled", detail: "changed my mind" } });
    expect((await status(runId)).status).toBe("failed");
  });
});

describe("bad requests get a 4xx JSON error naming the problem, and nothing is applied", () => {
  it("POST /runs: unknown agent, malformed JSON, invalid body, wrong content type, too-large body (declared and streamed)", async () => {
    stack = await startStack(join(temp.dir, "bad-start.db"), { maxBodyBytes: 2_000, clientInput: { payments: { state: true } } });
    const runs = `${stack.base}/runs`;
    const body = await expectError(await postJson(runs, { agent: "nobody", message: TASK }), 404, "unknown_agent", /"nobody"/);
    expect(body.error.field).toBe("agent");
    // An anonymous client is not told which agents there are.
    expect(body.error.message).not.toMatch(/payments/);
    await expectError(await fetch(runs, { method: "POST", headers: { "content-type": "application/json" }, body: '{"agent": "payments", ' }), 400, "malformed_json", /not valid JSON/);
    const missing = await expectError(await postJson(runs, { agent: "payments" }), 400, "invalid_body", /^message: give the task as message/);
    expect(missing.error.field).toBe("message");
    await expectError(await postJson(runs, { agent: "payments", message: TASK, extra: 1 }), 400, "invalid_body", /extra/);
    await expectError(await postJson(runs, { agent: "payments", messages: [{ role: "robot", content: "x" }] }), 400, "invalid_body", /^messages\.0\.role/);
    await expectError(await postJson(runs, { agent: "payments", message: [{ type: "image", data: "AAAA" }] }), 400, "invalid_body", /^message\.0\.mediaType: is needed with data or blob/);
    await expectError(await postJson(runs, { agent: "payments", message: [] }), 400, "invalid_body", /^message: needs at least one part/);
    // Fits the protocol, not the agent's state schema.
    const state = await expectError(await postJson(runs, { agent: "payments", message: TASK, state: { messages: 5 } }), 400, "invalid_body", /^state\.messages: .*expected array/);
    expect(state.error.field).toBe("state.messages");
    await expectError(await fetch(runs, { method: "POST", headers: { "content-type": "text/plain" }, body: TASK }), 415, "unsupported_media_type", /application\/json/);
    await expectError(await postJson(runs, { agent: "payments", message: "x".repeat(5_000) }), 413, "body_too_large", /2000 bytes/);
    // No content-length: the limit is enforced while reading.
    const chunks = [new TextEncoder().encode(`{"agent":"payments","message":"`), ...Array.from({ length: 64 }, () => new TextEncoder().encode("y".repeat(16_384))), new TextEncoder().encode(`"}`)];
    const streamed = new ReadableStream<Uint8Array>({
      pull(controller) {
        const next = chunks.shift();
        if (next) controller.enqueue(next);
        else controller.close();
      },
    });
    await expectError(await fetch(runs, { method: "POST", headers: { "content-type": "application/json" }, body: streamed, duplex: "half" } as RequestInit), 413, "body_too_large", /2000 bytes/);
    // Not one run was started or saved, and the model was never asked.
    expect(stack.store.list()).toEqual([]);
    expect(stack.model.requests).toHaveLength(0);
  });

  it("POST /runs with a message of parts: the model gets the image as an image_url part, the conversation keeps it", async () => {
    stack = await startStack(join(temp.dir, "parts.db"), { maxBodyBytes: 1_000_000 });
    const photo = Buffer.alloc(30_000, 7).toString("base64");
    const message = [{ type: "text", text: TASK }, { type: "image", data: photo, mediaType: "image/png" }];
    const response = await postJson(`${stack.base}/runs`, { agent: "payments", message });
    const reader = new EventReader(response);
    const first = await reader.until("message");
    expect(first.type === "message" && first.data.message.content).toEqual(message);
    await reader.until("approval.requested");
    const sent = stack.model.requests[0]!.body as { messages: { role: string; content: unknown }[] };
    expect(sent.messages.find((m) => m.role === "user")!.content).toEqual([{ type: "text", text: TASK }, { type: "image_url", image_url: { url: `data:image/png;base64,${photo}` } }]);
  });

  it("POST /runs: state past the run queue's input limits is a 400 naming the field and the limit, not a 500 or a run that cannot be restored", async () => {
    stack = await startStack(join(temp.dir, "deep-start.db"), { maxBodyBytes: 200_000, clientInput: { payments: { state: true } } });
    const runs = `${stack.base}/runs`;
    // JSON text written by hand: JSON.stringify itself overflows at this depth.
    const nested = (depth: number) => `${'{"a":'.repeat(depth)}"leaf"${"}".repeat(depth)}`;
    const post = (depth: number) =>
      fetch(runs, { method: "POST", headers: { "content-type": "application/json" }, body: `{"agent":"payments","message":${JSON.stringify(TASK)},"state":{"profile":${nested(depth)}}}` });
    // 10 000 levels used to overflow the stack (a 500); 460 started and then failed at the first restore.
    for (const depth of [10_000, 460]) {
      const deep = await expectError(await post(depth), 400, "invalid_body", /^state\.profile: it is nested more than 450 levels deep \(limits: 450 levels/);
      expect(deep.error.field).toBe("state.profile");
    }
    expect(stack.payments).toEqual([]);
  });

  it("POST /runs/:id/events: unknown run, bad command, a call not waiting, a finished run", async () => {
    stack = await startStack(join(temp.dir, "bad-events.db"));
    await expectError(await postJson(`${stack.base}/runs/no-such-run/events`, { type: "agent.cancel" }), 404, "unknown_run", /no-such-run/);
    const { reader, runId } = await startRun();
    await reader.until("approval.requested");
    const events = `${stack.base}/runs/${runId}/events`;
    await expectError(await postJson(events, { type: "guard.approve" }), 400, "invalid_body", /^callId/);
    await expectError(await postJson(events, { type: "guard.maybe", callId: "call_pay_1" }), 400, "invalid_body", /^type/);
    await expectError(await fetch(events, { method: "POST", headers: { "content-type": "application/json" }, body: "{type:" }), 400, "malformed_json", /JSON/);
    const notPending = await expectError(await postJson(events, { type: "guard.approve", callId: "call_other" }), 409, "not_pending", /call_other.*waits for call_pay_1/);
    expect(notPending.error.field).toBe("callId");
    // None of that touched the run.
    expect((await status(runId)).pendingApprovals.map((p) => p.callId)).toEqual(["call_pay_1"]);
    expect(stack.payments).toEqual([]);

    await postJson(events, { type: "guard.approve", callId: "call_pay_1" });
    await reader.until("run.finished");
    await expectError(await postJson(events, { type: "guard.approve", callId: "call_pay_1" }), 409, "run_finished", /has finished \(succeeded\)/);
    await expectError(await postJson(events, { type: "agent.cancel" }), 409, "run_finished", /takes no more events/);
    expect(stack.payments).toHaveLength(1);
  });

  it("unknown runs, routes and methods", async () => {
    stack = await startStack(join(temp.dir, "bad-routes.db"));
    await expectError(await fetch(`${stack.base}/runs/nope`), 404, "unknown_run", /"nope"/);
    await expectError(await fetch(`${stack.base}/runs/nope/stream`), 404, "unknown_run", /"nope"/);
    await expectError(await fetch(`${stack.base}/nothing-here`), 404, "not_found", /POST \/runs/);
    const wrong = await fetch(`${stack.base}/runs`);
    const refused = await expectError(wrong, 405, "method_not_allowed", /GET is not allowed.*use POST/);
    expect(refused.error.field).toBeUndefined();
    expect(wrong.headers.get("allow")).toBe("POST");
    await expectError(await fetch(`${stack.base}/agents/nobody/chart`), 404, "unknown_agent", /"nobody"/);
  });
});

describe("GET /agents/:name/chart", () => {
  it("draws the agent's statechart with the run viewer's renderer, every state addressable", async () => {
    stack = await startStack(join(temp.dir, "chart.db"));
    const response = await fetch(`${stack.base}/agents/payments/chart`);
    expect(response.status).toBe(200);
    const html = await response.text();
    expect(html).toMatch(/^<style>/);
    expect(html).toContain('<svg id="statechart"');
    for (const state of ["Initialising", "Evaluating.ChildRunning.AgentLLM", "Evaluating.ChildRunning.ToolExecutor.AwaitingApproval", "Succeeded", "Failed"]) {
      expect(html).toContain(`data-state="PaymentsAssistant.${state}"`);
    }
  });
});

describe("a run parked for approval survives a restart of the server", () => {
  it("a new handler on the same SQLite file restores the run on first contact and finishes it, paying once", async () => {
    const db = join(temp.dir, "restart.db");
    stack = await startStack(db);
    const { reader, runId } = await startRun();
    await reader.until("approval.requested");
    await stack.stop();
    await reader.rest().catch(() => undefined);

    stack = await startStack(db);
    expect(stack.store.list()).toMatchObject([{ runId, status: "awaitingApproval", state: AWAITING }]);
    const before = await status(runId);
    expect(before).toMatchObject({ status: "awaitingApproval", pendingApprovals: [{ callId: "call_pay_1" }] });
    expect(before.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
    const follow = new EventReader(await fetch(`${stack.base}/runs/${runId}/stream`, { headers: { "last-event-id": reader.events.at(-1)!.id } }));
    // The old process's ids mean nothing here: a snapshot first.
    expect((await follow.until("run.snapshot")).type).toBe("run.snapshot");
    expect((await postJson(`${stack.base}/runs/${runId}/events`, { type: "guard.approve", callId: "call_pay_1" })).status).toBe(202);
    const finished = await follow.until("run.finished");
    if (finished.type !== "run.finished") throw new Error("unreachable");
    expect(finished.data.output.finalAnswer).toBe("Done: transfer of EUR 1250 for INV-1042 sent.");
    expect(stack.payments).toEqual([{ invoice: "INV-1042", amountEur: 1250 }]);
    // The new model server got only the call after the tool: the first turn was not asked again.
    expect(stack.model.requests).toHaveLength(1);
    expect(stack.store.list()).toMatchObject([{ runId, status: "succeeded" }]);
  });
});

describe("the default store", () => {
  it("is the embedded SQLite file at storePath: a parked run is found by a new handler on the same file", async () => {
    const { ModelClient } = await import("../../index.js");
    const { agentHandler } = await import("../../http.js");
    const { startOpenAIServer } = await import("../../testing.js");
    const { createWebAssistant, webAssistantModel } = await import("../../examples/web/agent.js");
    const model = await startOpenAIServer({ respond: webAssistantModel().respond });
    const storePath = join(temp.dir, "default", "web-runs.db");
    const build = () =>
      agentHandler({
        agents: { payments: createWebAssistant({ modelClient: ModelClient.resolve({ baseURL: model.baseURL, apiKey: "test", model: "gpt-4o-mini" }) }) },
        storePath,
      });
    const post = (handler: ReturnType<typeof build>, path: string, body: unknown) =>
      handler(new Request(`http://app${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }));
    try {
      const first = build();
      const reader = new EventReader(await post(first, "/runs", { agent: "payments", message: TASK }));
      const started = await reader.until("run.started");
      await reader.until("state.changed", (e) => e.type === "state.changed" && e.data.path === AWAITING);
      await first.close();
      const runId = started.type === "run.started" ? started.data.runId : "";

      const second = build();
      const view = RunSnapshotSchema.parse(await (await second(new Request(`http://app/runs/${runId}`))).json());
      expect(view).toMatchObject({ runId, status: "awaitingApproval", pendingApprovals: [{ callId: "call_pay_1" }] });
      const follow = new EventReader(await second(new Request(`http://app/runs/${runId}/stream`)));
      expect((await post(second, `/runs/${runId}/events`, { type: "guard.approve", callId: "call_pay_1" })).status).toBe(202);
      const finished = await follow.until("run.finished");
      expect(finished.type === "run.finished" && finished.data.output.status).toBe("succeeded");
      await second.close();
    } finally {
      await model.close();
    }
  });
});

describe("parked runs cost no memory", () => {
  it("a run waiting with no follower is let go after releaseParkedMs and restored from its checkpoint on the next request", async () => {
    stack = await startStack(join(temp.dir, "release.db"), { releaseParkedMs: 100 });
    const { reader, runId } = await startRun();
    const parked = await reader.until("state.changed", (e) => e.type === "state.changed" && e.data.path === AWAITING);
    await reader.close();
    const epoch = parked.id.split(".")[0];
    // Each look is a short-lived follower; once the run was let go, the next look restores it (a new epoch).
    let seen = epoch;
    // Each pause is longer than releaseParkedMs plus a sweep, since every look counts as activity.
    for (let attempt = 0; attempt < 40 && seen === epoch; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 300));
      const look = new EventReader(await fetch(`${stack.base}/runs/${runId}/stream`));
      seen = (await look.until("run.snapshot")).id.split(".")[0];
      await look.close();
    }
    expect(seen).not.toBe(epoch);
    const restored = await status(runId);
    expect(restored).toMatchObject({ status: "awaitingApproval", pendingApprovals: [{ callId: "call_pay_1" }] });
    expect((await postJson(`${stack.base}/runs/${runId}/events`, { type: "guard.approve", callId: "call_pay_1" })).status).toBe(202);
    await expect.poll(async () => (await status(runId)).status, { timeout: 10_000 }).toBe("succeeded");
    expect(stack.payments).toEqual([{ invoice: "INV-1042", amountEur: 1250 }]);
    expect(stack.model.requests).toHaveLength(2);
  });

  it("a run someone follows is kept", async () => {
    stack = await startStack(join(temp.dir, "kept.db"), { releaseParkedMs: 50 });
    const { reader, runId } = await startRun();
    await reader.until("state.changed", (e) => e.type === "state.changed" && e.data.path === AWAITING);
    await new Promise((resolve) => setTimeout(resolve, 300));
    // Still the same live run: the follower gets the rest of its own stream.
    expect((await postJson(`${stack.base}/runs/${runId}/events`, { type: "guard.approve", callId: "call_pay_1" })).status).toBe(202);
    expect(types(await reader.rest()).at(-1)).toBe("run.finished");
  });
});

describe("an asynchronous store (as a remote database is)", () => {
  it("checkpoints are awaited: a parked run is restored by a new handler and finished", async () => {
    const { MemoryCheckpointStore, ModelClient } = await import("../../index.js");
    const { agentHandler } = await import("../../http.js");
    const { startOpenAIServer } = await import("../../testing.js");
    const { createWebAssistant, webAssistantModel } = await import("../../examples/web/agent.js");
    type Store = import("../../index.js").CheckpointStore;
    const memory = new MemoryCheckpointStore();
    const later = <T>(value: () => T) => new Promise<T>((resolve) => setTimeout(() => resolve(value()), 5));
    // Every call answers on a later turn of the event loop.
    const remote: Store = {
      save: (runId, record) => later(() => memory.save(runId, record)),
      load: (runId) => later(() => memory.load(runId)),
      list: () => later(() => memory.list()),
      delete: (runId) => later(() => memory.delete(runId)),
    };
    const model = await startOpenAIServer({ respond: webAssistantModel().respond });
    const payments: unknown[] = [];
    const build = () =>
      agentHandler({
        agents: { payments: createWebAssistant({ modelClient: ModelClient.resolve({ baseURL: model.baseURL, apiKey: "test", model: "gpt-4o-mini" }), journal: memory, onPayment: (p) => payments.push(p) }) },
        store: remote,
      });
    const post = (handler: ReturnType<typeof build>, path: string, body: unknown) =>
      handler(new Request(`http://app${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }));
    try {
      const first = build();
      const reader = new EventReader(await post(first, "/runs", { agent: "payments", message: TASK }));
      const started = await reader.until("run.started");
      await reader.until("state.changed", (e) => e.type === "state.changed" && e.data.path === AWAITING);
      const runId = started.type === "run.started" ? started.data.runId : "";
      await expect.poll(() => memory.list()[0]?.status, { timeout: 10_000 }).toBe("awaitingApproval");
      await first.close();

      const second = build();
      const follow = new EventReader(await second(new Request(`http://app/runs/${runId}/stream`)));
      const snapshot = await follow.until("run.snapshot");
      expect(snapshot.type === "run.snapshot" && snapshot.data.pendingApprovals.map((p) => p.callId)).toEqual(["call_pay_1"]);
      expect((await post(second, `/runs/${runId}/events`, { type: "guard.approve", callId: "call_pay_1" })).status).toBe(202);
      const finished = await follow.until("run.finished");
      expect(finished.type === "run.finished" && finished.data.output.status).toBe("succeeded");
      expect(payments).toEqual([{ invoice: "INV-1042", amountEur: 1250 }]);
      await expect.poll(() => memory.list()[0]?.status, { timeout: 10_000 }).toBe("succeeded");
      await second.close();
    } finally {
      await model.close();
    }
  });
});

describe("threads: POST /runs with threadId", () => {
  it("continues the thread's conversation in the next run; while a run of the thread has not ended, another is a 409 naming it", async () => {
    stack = await startStack(join(temp.dir, "threads.db"));
    const first = await postJson(`${stack.base}/runs`, { agent: "payments", message: TASK, threadId: "chat-7" });
    const reader = new EventReader(first);
    const started = await reader.until("run.started");
    if (started.type !== "run.started") throw new Error("unreachable");
    await reader.until("approval.requested");
    const busy = await expectError(await postJson(`${stack.base}/runs`, { agent: "payments", message: "And INV-2001 over EUR 99?", threadId: "chat-7" }), 409, "thread_busy", new RegExp(`thread chat-7 is busy: its run ${started.data.runId}`));
    expect(busy.error.field).toBe("threadId");
    await postJson(`${stack.base}/runs/${started.data.runId}/events`, { type: "guard.approve", callId: "call_pay_1" });
    await reader.until("run.finished");

    const next = await postJson(`${stack.base}/runs`, { agent: "payments", message: "And INV-2001 over EUR 99?", threadId: "chat-7" });
    const nextReader = new EventReader(next);
    const nextStarted = await nextReader.until("run.started");
    if (nextStarted.type !== "run.started") throw new Error("unreachable");
    await nextReader.until("approval.requested");
    const view = await status(nextStarted.data.runId);
    // The first run's conversation, then the new message and the model's answer to it.
    expect(view.messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant", "user", "assistant"]);
    expect(view.messages[0]!.content).toBe(TASK);
    expect(view.pendingApprovals).toMatchObject([{ name: "pay_invoice", arguments: JSON.stringify({ invoice: "INV-2001", amountEur: 99 }) }]);
    await expectError(await postJson(`${stack.base}/runs`, { agent: "payments", message: TASK, threadId: "not a thread id" }), 400, "invalid_body", /threadId/);
  });
});
