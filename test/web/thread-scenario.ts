import { expect } from "vitest";
import type { AgentHandlerOptions } from "../../http.js";
import type { Payment } from "../../examples/web/agent.js";
import { ErrorBodySchema, ThreadViewSchema, type ThreadView } from "../../web/protocol.js";
import { EventReader, postJson, TASK } from "./helpers.js";

export const SECOND_TASK = "And invoice INV-2001 over EUR 99?";

/** Alice reads her thread "alice-chat"; anyone with a session may start and approve; nobody else reads it. */
export function threadAuthorize(asked: string[]): NonNullable<AgentHandlerOptions["authorize"]> {
  return ({ request, action, agent, threadId, runId }) => {
    const user = /(?:^|;\s*)session=(\w+)/.exec(request.headers.get("cookie") ?? "")?.[1];
    if (threadId !== undefined) asked.push(`${user ?? "anonymous"}:${action}:${agent}:${threadId}${runId ? ":run" : ""}`);
    if (user === undefined) return false;
    return threadId === undefined || user === "alice";
  };
}

const asAlice = { cookie: "session=alice" };

export async function readThread(base: string, threadId: string, headers: Record<string, string> = asAlice): Promise<ThreadView> {
  const response = await fetch(`${base}/threads/${encodeURIComponent(threadId)}`, { headers });
  expect(response.status).toBe(200);
  return ThreadViewSchema.parse(await response.json());
}

/** Start a run on the thread on `start`, wait for its approval request; the call waiting. */
async function startOnThread(start: string, threadId: string, message: string) {
  const response = await postJson(`${start}/runs`, { agent: "payments", message, threadId }, asAlice);
  expect(response.status).toBe(200);
  const reader = new EventReader(response);
  const requested = await reader.until("approval.requested");
  return { runId: response.headers.get("x-run-id")!, reader, callId: requested.type === "approval.requested" ? requested.data.callId : "" };
}

/**
 * Two runs on one thread through HTTP, started on replica `a`, approved and read on replica `b`:
 * while the second waits, the thread lists both runs and the first run's conversation; once it has
 * ended, both runs and the whole conversation. Approving the second with an edit the tool refuses is
 * a 422 naming `args` on `b` and the corrected approval goes through, as in process.
 */
export async function twoRunsOnOneThread(a: string, b: string, payments: readonly Payment[]): Promise<void> {
  const threadId = "alice-chat";
  const first = await startOnThread(a, threadId, TASK);
  expect((await postJson(`${b}/runs/${first.runId}/events`, { type: "guard.approve", callId: first.callId }, asAlice)).status).toBe(202);
  await first.reader.until("run.finished");
  // The stream's last event is stored after the run's output, on a run queue too: the thread is free at once.
  expect((await readThread(b, threadId)).runs.at(-1)?.status).toBe("succeeded");

  const second = await startOnThread(a, threadId, SECOND_TASK);
  // The approval request is streamed before the checkpoint that parks the run is written.
  await expect.poll(async () => (await readThread(b, threadId)).runs.at(-1)?.status).toBe("awaitingApproval");
  const waiting = await readThread(b, threadId);
  expect(waiting.runs).toEqual([
    { runId: first.runId, agent: "payments", status: "succeeded" },
    { runId: second.runId, agent: "payments", status: "awaitingApproval" },
  ]);
  expect(waiting.messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant"]);

  // An edit the tool's schema refuses: 422 naming args, nothing recorded; the corrected decision goes through.
  const refused = await postJson(`${b}/runs/${second.runId}/events`, { type: "guard.approve", callId: second.callId, args: { invoice: "INV-2001", amountEur: -99 } }, asAlice);
  const error = ErrorBodySchema.parse(await refused.json()).error;
  expect({ status: refused.status, code: error.code, field: error.field }).toEqual({ status: 422, code: "command_refused", field: "args" });
  expect(error.message).toMatch(/the edited arguments do not fit pay_invoice: .*amountEur/);
  const corrected = await postJson(`${b}/runs/${second.runId}/events`, { type: "guard.approve", callId: second.callId, args: { invoice: "INV-2001", amountEur: 98 } }, asAlice);
  expect(corrected.status).toBe(202);
  await second.reader.until("run.finished");
  expect(payments).toEqual([
    { invoice: "INV-1042", amountEur: 1250 },
    { invoice: "INV-2001", amountEur: 98 },
  ]);

  const ended = await readThread(b, threadId);
  expect(ended.runs).toEqual([
    { runId: first.runId, agent: "payments", status: "succeeded" },
    { runId: second.runId, agent: "payments", status: "succeeded" },
  ]);
  expect(ended.messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant", "user", "assistant", "tool", "assistant"]);
  expect(ended.messages[0]!.content).toBe(TASK);
  expect(ended.messages[4]!.content).toBe(SECOND_TASK);
  expect(ended.messages[6]!.content).toBe("transfer of EUR 98 for INV-2001 sent");
  // The same from the replica that started the runs.
  expect(await readThread(a, threadId)).toEqual(ended);
}

/** 404 for a thread no run used; 403 "forbidden" and nothing else for someone `authorize` refuses. */
export async function threadRefusals(base: string): Promise<void> {
  const unknown = await fetch(`${base}/threads/nobody-chat`, { headers: asAlice });
  expect(unknown.status).toBe(404);
  expect(ErrorBodySchema.parse(await unknown.json()).error.code).toBe("unknown_thread");
  for (const headers of [{ cookie: "session=mallory" }, {}] as Record<string, string>[]) {
    const denied = await fetch(`${base}/threads/alice-chat`, { headers });
    expect(denied.status).toBe(403);
    expect(await denied.json()).toEqual({ error: { code: "forbidden", message: "forbidden" } });
  }
  // Mallory may not continue Alice's thread either (the new run would show her its conversation).
  const continued = await postJson(`${base}/runs`, { agent: "payments", message: "What did Alice pay?", threadId: "alice-chat" }, { cookie: "session=mallory" });
  expect(continued.status).toBe(403);
}
