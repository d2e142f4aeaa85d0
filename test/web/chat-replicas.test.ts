import { join } from "node:path";
import { buildResumeArray, HttpAgent } from "@ag-ui/client";
import { DefaultChatTransport, type UIMessage } from "ai";
import { describe, expect, it } from "vitest";
import { createReactMachine, ModelClient, type ToolProvider } from "../../index.js";
import { SqliteRunStore, startWorker, type WorkerEvent } from "../../sqlite.js";
import { scriptedTurns, startOpenAIServer, textTurn, toolCallTurn } from "../../testing.js";
import { AGENT_NAME, createWebAssistant, payInvoiceTool, paymentsNeedApproval, webAssistantModel, type Payment } from "../../examples/web/agent.js";
import { storeRunEvents } from "../../http.js";
import { ErrorBodySchema } from "../../web/protocol.js";
import { postJson, scratchPerTest, startReplica, TASK, type Replica } from "./helpers.js";
import { paymentsAgent } from "./queue-helpers.js";
import { agUiText, answer, chartState, runAgUi as run, send, textOf, toolParts, user } from "./chat-helpers.js";

/**
 * The chat routes on a run queue: two handler replicas, each with its own SqliteRunStore on one file
 * (as two processes would have), and a separate worker with its own. Neither replica runs an agent
 * (`worker: false`), so a chat works across them only if nothing of it is held in a replica's memory.
 * The AI SDK side is `ai`'s own client (DefaultChatTransport, readUIMessageStream), AI SDK 6's and
 * again AI SDK 7's (vitest.config.ts's two projects); AG-UI's is `@ag-ui/client`'s HttpAgent.
 */
const { temp, cleanups } = scratchPerTest();

interface Cluster {
  a: Replica;
  b: Replica;
  /** The worker's store (any store on the file sees the same runs). */
  store: SqliteRunStore;
  payments: Payment[];
  /** The runs the worker claimed, one entry per claim. */
  claims: string[];
  /** Stop replica A and close its store: what is left of a chat is in the file. */
  stopA(): Promise<void>;
}

type Agent = Awaited<ReturnType<typeof paymentsAgent>>;

/** Replicas A and B and a worker on one SQLite file; the payments agent by default, on the example's model. */
async function cluster(agentOn: (store: SqliteRunStore) => Promise<Agent> = paymentsAgent): Promise<Cluster> {
  const path = join(temp.dir, "chat.db");
  const store = new SqliteRunStore({ path, pollMs: 20 });
  const agent = await agentOn(store);
  const claims: string[] = [];
  const onEvent = (event: WorkerEvent) => void (event.type === "run.claimed" && claims.push(event.runId));
  const worker = await startWorker({ store, agents: agent.agents, observe: storeRunEvents(store), pollMs: 20, onEvent });
  cleanups.push(() => agent.model.close(), () => store.close(), () => worker.stop({ timeoutMs: 1_000 }));
  const replica = async () => {
    const own = new SqliteRunStore({ path, pollMs: 20 });
    const started = await startReplica({ agents: agent.agents, store: own, worker: false, streamPollMs: 20 });
    let stopped: Promise<void> | undefined;
    const stop = () => (stopped ??= started.stop().then(() => own.close()));
    cleanups.push(stop);
    return { replica: started, stop };
  };
  const [a, b] = await Promise.all([replica(), replica()]);
  return { a: a.replica, b: b.replica, store, payments: agent.payments, claims, stopA: a.stop };
}

describe("useChat's route on a run queue, across replicas", () => {
  it("started on A and read with ai's own reader, A stopped, the approval answered through B: the tool runs once, the message completes, the next turn goes on from the stored run", async () => {
    const { a, b, store, payments, claims, stopA } = await cluster();
    const question = user("u1", TASK);
    const first = await send(new DefaultChatTransport<UIMessage>({ api: `${a.base}/agents/payments/chat` }), [question]);

    const runId = first.message.id;
    expect(first.message.metadata).toMatchObject({ runId, agent: "payments" });
    expect(textOf(first.message)).toBe("I found invoice INV-1042 over EUR 1250. I will pay it once you approve.");
    const [call] = toolParts(first.message);
    expect(call).toMatchObject({ type: "tool-pay_invoice", state: "approval-requested", input: { invoice: "INV-1042", amountEur: 1250 } });
    expect(chartState(first.message)?.data).toMatchObject({ status: "awaitingApproval" });
    expect(first.chunks.at(-1)).toEqual({ type: "finish", finishReason: "tool-calls" });
    // The run is the queue's: submitted by A, executed by the worker, parked in the store.
    expect(claims).toEqual([runId]);
    const parked = async () => {
      const { status, owner } = await store.status(runId);
      return { status, held: owner !== undefined };
    };
    await expect.poll(parked, { timeout: 5_000 }).toEqual({ status: "awaitingApproval", held: false });
    expect(payments).toEqual([]);

    await stopA();
    const onB = new DefaultChatTransport<UIMessage>({ api: `${b.base}/agents/payments/chat` });
    const second = await send(onB, [question, answer(first.message, true)]);
    expect(second.message.id).toBe(runId);
    // B tells only what the answer set off: the call's output, not the call or the first reply again.
    expect(second.chunks.map((chunk) => chunk.type)).not.toContain("tool-input-available");
    expect(toolParts(second.message)).toEqual([expect.objectContaining({ toolCallId: call!.toolCallId, state: "output-available", output: "transfer of EUR 1250 for INV-1042 sent" })]);
    expect(textOf(second.message)).toBe("I found invoice INV-1042 over EUR 1250. I will pay it once you approve.|Done: transfer of EUR 1250 for INV-1042 sent.");
    expect(second.message.metadata).toMatchObject({ runId, output: { status: "succeeded" } });
    expect(second.chunks.at(-1)).toMatchObject({ type: "finish", finishReason: "stop" });
    expect(payments).toEqual([{ invoice: "INV-1042", amountEur: 1250 }]);
    // The worker took the parked run back when the answer reached its inbox.
    expect(claims).toEqual([runId, runId]);

    // The same answer again: the run has finished, nothing runs twice.
    const again = await postJson(`${b.base}/agents/payments/chat`, { messages: [question, answer(first.message, true)] });
    expect({ status: again.status, code: ErrorBodySchema.parse(await again.json()).error.code }).toEqual({ status: 409, code: "run_finished" });
    expect(payments).toHaveLength(1);

    // The next turn, on B, goes on from the conversation stored with the run (its output is stored
    // before its last event, so the turn never finds it still running).
    const third = await send(onB, [question, second.message, user("u2", "Now pay INV-1043 to Acme too: EUR 80.")]);
    expect(third.message.id).not.toBe(runId);
    expect(toolParts(third.message)).toEqual([expect.objectContaining({ state: "approval-requested", input: { invoice: "INV-1043", amountEur: 80 } })]);
    const view = await store.load(third.message.id);
    expect(JSON.stringify(view?.snapshot)).toContain("transfer of EUR 1250 for INV-1042 sent");
  }, 30_000);
});

describe("AG-UI's route on a run queue, across replicas", () => {
  it("started on A, its interrupt resumed through B: an edit the tool's schema refuses is a 422 that sends nothing, the corrected one runs the tool once", async () => {
    const { a, b, store, payments, claims } = await cluster();
    let target = a.base;
    const agent = new HttpAgent({ url: "http://chat.local/agents/payments/ag-ui", threadId: "thread-1", fetch: (url, init) => fetch(`${target}${new URL(String(url)).pathname}`, init) });
    agent.addMessage({ id: "u1", role: "user", content: TASK });
    const first = await run(agent);
    expect(first.types[0]).toBe("RUN_STARTED");
    expect(first.types.filter((type) => type === "TEXT_MESSAGE_CONTENT").length).toBeGreaterThan(0);
    expect(first.types.at(-1)).toBe("RUN_FINISHED");
    expect(agUiText(agent.messages)).toBe("I found invoice INV-1042 over EUR 1250. I will pay it once you approve.");
    // The interrupt is told from the run's stored events: the waiting call with its guard's reason.
    expect(agent.pendingInterrupts).toEqual([expect.objectContaining({ reason: "tool_approval", toolCallId: "call_pay_1", message: "payments need a second pair of eyes" })]);
    expect(agent.state).toEqual({ jianmu: expect.objectContaining({ status: "awaitingApproval" }) });
    const interrupt = agent.pendingInterrupts[0]!;

    target = b.base;
    const bad = await postJson(`${b.base}/agents/payments/ag-ui`, { threadId: "thread-1", runId: "ag-2", messages: [], resume: [{ interruptId: interrupt.id, status: "resolved", payload: { approved: true, editedArgs: { invoice: "nope", amountEur: 5 } } }] });
    const refused = ErrorBodySchema.parse(await bad.json()).error;
    expect({ status: bad.status, code: refused.code, field: refused.field }).toEqual({ status: 422, code: "command_refused", field: "args" });
    expect(refused.message).toContain("INV-1042");
    // Nothing reached the run's inbox: it still waits for the same call.
    const runId = interrupt.id.split(":")[1]!;
    expect((await store.status(runId)).pendingApprovals).toEqual([expect.objectContaining({ callId: "call_pay_1" })]);

    const second = await run(agent, { resume: buildResumeArray(agent.pendingInterrupts, { [interrupt.id]: { status: "resolved", payload: { approved: true, editedArgs: { invoice: "INV-1042", amountEur: 1200 } } } }) });
    expect(second.types).toContain("TOOL_CALL_RESULT");
    expect(second.types).not.toContain("TOOL_CALL_START");
    expect(agent.messages.find((m) => m.role === "tool")).toMatchObject({ toolCallId: "call_pay_1", content: "transfer of EUR 1200 for INV-1042 sent" });
    expect(second.result.result).toBe("Done: transfer of EUR 1200 for INV-1042 sent.");
    expect(agent.pendingInterrupts).toEqual([]);
    expect(agent.state).toEqual({ jianmu: expect.objectContaining({ status: "succeeded" }) });
    expect(payments).toEqual([{ invoice: "INV-1042", amountEur: 1200 }]);
    expect((await store.status(runId)).status).toBe("succeeded");
    expect(new Set(claims)).toEqual(new Set([runId]));
  }, 30_000);

  it("an edit only the run can check (a tool provider's tool), refused on the worker: the response ends with the call asked again, the refusal as its message; the corrected answer runs the tool once", async () => {
    const { a, b, payments } = await cluster(providerAgent);
    const start = await postJson(`${a.base}/agents/payments/ag-ui`, { threadId: "t", runId: "ag-1", messages: [{ id: "u1", role: "user", content: TASK }] });
    const first = agUiEvents(await start.text());
    const [interrupt] = first.at(-1)!.outcome!.interrupts!;
    expect(interrupt).toMatchObject({ toolCallId: "call_pay_1" });
    const resume = (replica: Replica, runId: string, payload: { approved: boolean; editedArgs: Record<string, unknown> }) =>
      postJson(`${replica.base}/agents/payments/ag-ui`, { threadId: "t", runId, messages: [], resume: [{ interruptId: interrupt!.id, status: "resolved", payload }] });

    // The replica cannot check it: it goes to the run, whose worker refuses it. The response ends (it does not hang) with the call again.
    const bad = await resume(b, "ag-2", { approved: true, editedArgs: { invoice: "nope", amountEur: 5 } });
    expect(bad.status).toBe(200);
    const refused = agUiEvents(await bad.text());
    expect(refused.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "interrupt", interrupts: [{ id: interrupt!.id, toolCallId: "call_pay_1" }] } });
    expect(refused.at(-1)!.outcome!.interrupts![0]!.message).toMatch(/^your answer was not applied: .*pay_invoice.*INV-1042/);
    expect(payments).toEqual([]);

    const corrected = agUiEvents(await (await resume(a, "ag-3", { approved: true, editedArgs: { invoice: "INV-1042", amountEur: 1200 } })).text());
    expect(corrected.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
    expect(payments).toEqual([{ invoice: "INV-1042", amountEur: 1200 }]);
  }, 30_000);

  it("a resume through B that answers one of two waiting calls ends at once with the other as the interrupt; the second answer, through A, runs both", async () => {
    const { a, b, store, payments } = await cluster(twoCallAgent);
    const start = await postJson(`${a.base}/agents/payments/ag-ui`, { threadId: "t", runId: "ag-1", messages: [{ id: "u1", role: "user", content: "Pay INV-1 and INV-2." }] });
    const interrupts = (events: AgUiWire[]) => events.at(-1)?.outcome?.interrupts?.map((interrupt) => interrupt.toolCallId);
    const first = agUiEvents(await start.text());

    expect(interrupts(first)).toEqual(["call_1", "call_2"]);
    const [one, two] = first.at(-1)!.outcome!.interrupts!;

    // One answer: the run still waits for the other, and the response says so without waiting for the worker.
    const resume = (replica: Replica, interrupt: { id: string }, runId: string) =>
      postJson(`${replica.base}/agents/payments/ag-ui`, { threadId: "t", runId, messages: [], resume: [{ interruptId: interrupt.id, status: "resolved", payload: { approved: true } }] });
    const partial = agUiEvents(await (await resume(b, one!, "ag-2")).text());
    expect(partial.map((event) => event.type)).toEqual(["RUN_STARTED", "RUN_FINISHED"]);
    expect(interrupts(partial)).toEqual(["call_2"]);
    expect(payments).toEqual([]);

    // The other, through A, while the first may still be in the inbox: the run goes on.
    const rest = agUiEvents(await (await resume(a, two!, "ag-3")).text());
    expect(rest.filter((event) => event.type === "TOOL_CALL_RESULT").map((event) => event.toolCallId)).toEqual(["call_1", "call_2"]);
    expect(rest.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" }, result: "Both paid." });
    expect(payments).toEqual([
      { invoice: "INV-1", amountEur: 10 },
      { invoice: "INV-2", amountEur: 20 },
    ]);
    expect((await store.status(one!.id.split(":")[1]!)).status).toBe("succeeded");
  }, 30_000);
});

/**
 * The payments agent with pay_invoice offered by a tool provider instead of its own tools: the
 * replicas do not know the tool, so only the run (on its worker) can check an edit of its arguments.
 */
async function providerAgent(store: SqliteRunStore): Promise<Agent> {
  const model = await startOpenAIServer({ respond: webAssistantModel().respond });
  const payments: Payment[] = [];
  const pay = payInvoiceTool((p) => payments.push(p));
  const ledger: ToolProvider = { name: "ledger", initialize: () => undefined, getTools: () => [pay], close: () => undefined };
  const machine = createReactMachine({
    name: "ProviderPayments",
    modelClient: ModelClient.resolve({ baseURL: model.baseURL, apiKey: "test", model: "gpt-4o-mini" }),
    toolProviders: [ledger],
    constraints: [paymentsNeedApproval],
    journal: store,
    configFile: false,
  });
  return { agents: { [AGENT_NAME]: machine }, payments, model };
}

/** The payments agent on a model that asks for two payments in one turn, then says it is done. */
async function twoCallAgent(store: SqliteRunStore): Promise<Agent> {
  const calls = [
    { id: "call_1", name: "pay_invoice", args: { invoice: "INV-1", amountEur: 10 } },
    { id: "call_2", name: "pay_invoice", args: { invoice: "INV-2", amountEur: 20 } },
  ];
  const model = await startOpenAIServer({ respond: scriptedTurns([toolCallTurn(calls), textTurn("Both paid.")]).respond });
  const payments: Payment[] = [];
  const modelClient = ModelClient.resolve({ baseURL: model.baseURL, apiKey: "test", model: "gpt-4o-mini" });
  return { agents: { [AGENT_NAME]: createWebAssistant({ modelClient, journal: store, onPayment: (p) => payments.push(p) }) }, payments, model };
}

/** What these tests read of an AG-UI event. */
interface AgUiWire {
  type: string;
  toolCallId?: string;
  outcome?: { type: string; interrupts?: { id: string; toolCallId: string; message: string }[] };
}

/** An AG-UI response's events, from its `data:` lines. */
function agUiEvents(body: string): AgUiWire[] {
  return body.split("\n\n").flatMap((block) => (block.startsWith("data: ") ? [JSON.parse(block.slice(6)) as AgUiWire] : []));
}
