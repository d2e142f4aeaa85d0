import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createActor, waitFor, type Actor } from "xstate";
import { agentClientMachine, clientStatusOf, readSse, readThread, reconnectDelay, type AgentClientStatus } from "../../react.js";
import { startStack, tempDir, TASK, type WebStack } from "./helpers.js";

/**
 * The page's side of a run (the statechart useAgent drives), in Node against a real agentHandler:
 * its states as the run goes, approvals, a stream cut mid-run and resumed with Last-Event-ID,
 * a reloaded page following its run by id, and a refused start.
 */

let temp: ReturnType<typeof tempDir>;
let stack: WebStack;
beforeAll(() => {
  temp = tempDir();
});
afterAll(() => temp.remove());
afterEach(async () => {
  await stack?.stop();
});

type Client = Actor<typeof agentClientMachine>;

/** Every status the client passed through, without repeats. */
function statuses(client: Client): AgentClientStatus[] {
  const seen: AgentClientStatus[] = [clientStatusOf(client.getSnapshot().value)];
  client.subscribe((snapshot) => {
    const status = clientStatusOf(snapshot.value);
    if (seen[seen.length - 1] !== status) seen.push(status);
  });
  return seen;
}

const is = (status: AgentClientStatus) => (snapshot: ReturnType<Client["getSnapshot"]>) => clientStatusOf(snapshot.value) === status;

describe("agentClientMachine", () => {
  it("with threadId: each run continues the thread's conversation, and readThread lists the runs and the conversation", async () => {
    stack = await startStack(join(temp.dir, "client-thread.db"));
    const runIds: string[] = [];
    for (const message of [TASK, "And invoice INV-2001 over EUR 99?"]) {
      const client = createActor(agentClientMachine, { input: { url: stack.base, agent: "payments", threadId: "page-thread" } }).start();
      client.send({ type: "start", message });
      const parked = await waitFor(client, is("awaitingApproval"));
      client.send({ type: "approve", callId: parked.context.run.pendingApprovals[0]!.callId });
      const done = await waitFor(client, is("done"));
      runIds.push(done.context.run.runId!);
      client.stop();
      // The thread takes its next run once this one's final checkpoint is stored.
      await expect.poll(async () => (await readThread({ url: stack.base, threadId: "page-thread" })).runs.at(-1)?.status).toBe("succeeded");
    }
    const thread = await readThread({ url: stack.base, threadId: "page-thread" });
    expect(thread.runs).toEqual(runIds.map((runId) => ({ runId, agent: "payments", status: "succeeded" })));
    expect(thread.messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant", "user", "assistant", "tool", "assistant"]);
    await expect(readThread({ url: stack.base, threadId: "no-such-thread" })).rejects.toThrow(/there is no thread "no-such-thread"/);
  });

  it("idle → connecting → streaming → awaitingApproval → (approve) → streaming → done, with the conversation and output", async () => {
    stack = await startStack(join(temp.dir, "client.db"));
    const client = createActor(agentClientMachine, { input: { url: stack.base, agent: "payments" } }).start();
    const seen = statuses(client);
    client.send({ type: "start", message: TASK });
    // The approval request comes first, then the chart's move from Preflight into AwaitingApproval.
    const parked = await waitFor(client, (s) => is("awaitingApproval")(s) && s.context.run.state?.path.endsWith(".AwaitingApproval") === true);
    expect(parked.context.run.pendingApprovals).toMatchObject([{ callId: "call_pay_1", name: "pay_invoice", reason: "payments need a second pair of eyes" }]);
    expect(parked.context.run.state?.path).toBe("Evaluating.ChildRunning.ToolExecutor.AwaitingApproval");
    expect(parked.context.run.deltas).toBeGreaterThan(1);
    expect(parked.context.run.toolCalls).toMatchObject([{ callId: "call_pay_1", status: "awaitingApproval" }]);

    client.send({ type: "approve", callId: "call_pay_1" });
    const done = await waitFor(client, is("done"));
    expect(seen).toEqual(["idle", "connecting", "streaming", "awaitingApproval", "streaming", "done"]);
    expect(done.context.run.output).toMatchObject({ status: "succeeded", finalAnswer: "Done: transfer of EUR 1250 for INV-1042 sent." });
    expect(done.context.run.messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant"]);
    expect(done.context.run.toolCalls).toMatchObject([{ callId: "call_pay_1", status: "completed", output: "transfer of EUR 1250 for INV-1042 sent" }]);
    expect(done.context.run.usage.totalTokens).toBe(450);
    expect(done.context.run.streamingText).toBe("");
    expect(stack.payments).toHaveLength(1);
    client.stop();
  });

  it("a refused approval is reported and the run keeps waiting", async () => {
    stack = await startStack(join(temp.dir, "refused.db"));
    const client = createActor(agentClientMachine, { input: { url: stack.base, agent: "payments" } }).start();
    client.send({ type: "start", message: TASK });
    await waitFor(client, is("awaitingApproval"));
    client.send({ type: "approve", callId: "call_pay_1", args: { invoice: "nonsense", amountEur: 3 } });
    const refused = await waitFor(client, (s) => s.context.error !== undefined);
    expect(refused.context.error).toMatch(/invoice/);
    expect(clientStatusOf(refused.value)).toBe("awaitingApproval");
    client.send({ type: "reject", callId: "call_pay_1", reason: "not today" });
    const done = await waitFor(client, is("done"));
    expect(done.context.run.output?.finalAnswer).toMatch(/not today/);
    expect(done.context.run.toolCalls[0]?.status).toBe("denied");
    expect(stack.payments).toEqual([]);
    client.stop();
  });

  it("a stream cut mid-run: reconnecting, then GET /runs/:id/stream with Last-Event-ID; no event twice", async () => {
    stack = await startStack(join(temp.dir, "cut.db"));
    const requests: { url: string; lastEventId: string | null }[] = [];
    let cut = true;
    // The first stream breaks off after a few events, as a dropped connection would.
    const fetchWithCut = async (url: string, init?: RequestInit) => {
      requests.push({ url, lastEventId: new Headers(init?.headers).get("last-event-id") });
      const response = await fetch(url, init);
      if (!cut || !url.endsWith("/runs") || !response.body) return response;
      cut = false;
      const reader = response.body.getReader();
      let events = 0;
      const broken = new ReadableStream<Uint8Array>({
        async pull(controller) {
          const { done, value } = await reader.read();
          if (done) return controller.close();
          events += new TextDecoder().decode(value).split("\n\n").length - 1;
          controller.enqueue(value);
          if (events >= 4) {
            await reader.cancel();
            controller.error(new Error("connection reset"));
          }
        },
      });
      return new Response(broken, { status: response.status, headers: response.headers });
    };
    const client = createActor(agentClientMachine, { input: { url: stack.base, agent: "payments", fetch: fetchWithCut } }).start();
    const seen = statuses(client);
    let lastIdBeforeCut: string | undefined;
    client.subscribe((s) => {
      if (clientStatusOf(s.value) === "reconnecting" && lastIdBeforeCut === undefined) lastIdBeforeCut = s.context.lastEventId;
    });
    client.send({ type: "start", message: TASK });
    await waitFor(client, is("awaitingApproval"));
    expect(seen.slice(0, 4)).toEqual(["idle", "connecting", "streaming", "reconnecting"]);
    expect(requests[1]).toEqual({ url: `${stack.base}/runs/${client.getSnapshot().context.run.runId}/stream`, lastEventId: lastIdBeforeCut! });
    expect(lastIdBeforeCut).toMatch(/^\w+\.\d+$/);
    client.send({ type: "approve", callId: "call_pay_1" });
    const done = await waitFor(client, is("done"));
    // Replayed from where it stopped: the conversation and the streamed text are not doubled.
    expect(done.context.run.messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant"]);
    expect(done.context.run.messages[1]).toMatchObject({ content: "I found invoice INV-1042 over EUR 1250. I will pay it once you approve." });
    client.stop();
  });

  it("a reloaded page follows its run by id: a snapshot, then the approval", async () => {
    stack = await startStack(join(temp.dir, "reload.db"));
    const first = createActor(agentClientMachine, { input: { url: stack.base, agent: "payments" } }).start();
    first.send({ type: "start", message: TASK });
    const parked = await waitFor(first, is("awaitingApproval"));
    first.stop();
    const runId = parked.context.run.runId!;

    const reloaded = createActor(agentClientMachine, { input: { url: stack.base, agent: "payments", runId } }).start();
    const again = await waitFor(reloaded, is("awaitingApproval"));
    expect(again.context.run.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
    expect(again.context.run.streamingText).toBe("");
    expect(again.context.run.toolCalls).toMatchObject([{ callId: "call_pay_1", status: "awaitingApproval" }]);
    reloaded.send({ type: "approve", callId: "call_pay_1" });
    expect((await waitFor(reloaded, is("done"))).context.run.output?.status).toBe("succeeded");
    reloaded.stop();
  });

  it("a refused start (unknown agent) fails with the server's reason; an unreachable server too, after its retries", async () => {
    stack = await startStack(join(temp.dir, "refuse.db"));
    const client = createActor(agentClientMachine, { input: { url: stack.base, agent: "nobody" } }).start();
    client.send({ type: "start", message: TASK });
    const failed = await waitFor(client, is("failed"));
    expect(failed.context.error).toMatch(/there is no agent "nobody"/);

    const gone = createActor(agentClientMachine, { input: { url: "http://127.0.0.1:9/api", agent: "payments", runId: "r1", maxReconnects: 2 } }).start();
    const seen = statuses(gone);
    const lost = await waitFor(gone, is("failed"));
    expect(lost.context.error).toMatch(/cannot reach/);
    expect(seen.filter((s) => s === "reconnecting")).toHaveLength(2);
    gone.stop();
    client.stop();
  });
});

describe("the SSE reader and reconnection pauses", () => {
  it("parses events split anywhere, CRLF and CR line ends, multi-line data, comments and ids", async () => {
    const text = ": hello\r\nretry: 1000\r\n\r\nid: a.1\nevent: text.delta\ndata: {\"delta\":\ndata: \"x\"}\n\nid: a.2\revent: usage\rdata: 1\r\r";
    const bytes = new TextEncoder().encode(text);
    for (const size of [1, 3, 7, bytes.length]) {
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          for (let i = 0; i < bytes.length; i += size) controller.enqueue(bytes.slice(i, i + size));
          controller.close();
        },
      });
      const got = [];
      for await (const message of readSse(body)) got.push(message);
      expect(got, `chunks of ${size}`).toEqual([
        { id: "a.1", event: "text.delta", data: '{"delta":\n"x"}' },
        { id: "a.2", event: "usage", data: "1" },
      ]);
    }
  });

  it("pauses grow from 200 ms and stay under 2 s", () => {
    expect([0, 1, 2, 3, 4, 10].map(reconnectDelay)).toEqual([200, 400, 800, 1600, 2000, 2000]);
  });
});
