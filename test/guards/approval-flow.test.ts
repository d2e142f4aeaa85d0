import { describe, expect, it } from "vitest";
import { z } from "zod";
import { requireApproval } from "../../actors/guards/index.js";
import { human, type Message } from "../../actors/messages.js";
import { createReactMachine } from "../../machines/react-machine.js";
import type { AgentEmitted } from "../../machines/contract/events.js";
import { scriptedModel, type ScriptedResponse } from "../../testing/scripted-model.js";
import { defineTool } from "../../tools/tool.js";
import { nextEvent, startAgent } from "../core/helpers.js";

/** Two tagged tools that record what they receive, and a harmless one. */
function tools() {
  const deleted: { path: string }[] = [];
  const fetched: string[] = [];
  const listed: string[] = [];
  const deleteFile = defineTool({
    name: "delete_file",
    description: "Delete a file",
    parameters: z.object({ path: z.string().min(1) }),
    effectTags: ["destructive"],
    execute: (args) => {
      deleted.push(args);
      return `deleted ${args.path}`;
    },
  });
  const fetchUrl = defineTool({
    name: "fetch_url",
    description: "Fetch a URL",
    parameters: z.object({ url: z.string() }),
    effectTags: ["network"],
    execute: ({ url }) => {
      fetched.push(url);
      return `fetched ${url}`;
    },
  });
  const list = defineTool({
    name: "list_dir",
    description: "List a directory",
    parameters: z.object({ path: z.string() }),
    execute: ({ path }) => {
      listed.push(path);
      return `a.txt b.txt in ${path}`;
    },
  });
  return { all: [deleteFile, fetchUrl, list], deleted, fetched, listed };
}

function agent(script: ScriptedResponse[], guards = [requireApproval({ effectTags: ["destructive", "network"] })]) {
  const t = tools();
  const model = scriptedModel(script);
  const machine = createReactMachine({ modelClient: model, tools: t.all, constraints: guards });
  const run = startAgent(machine, { messages: [human("tidy up")] });
  return { ...t, model, ...run };
}

const deleteCall = (id: string, path: string) => ({ id, name: "delete_file", arguments: { path } });
const of = <T extends AgentEmitted["type"]>(events: AgentEmitted[], type: T) =>
  events.filter((e): e is Extract<AgentEmitted, { type: T }> => e.type === type);
const toolAnswers = (messages: Message[]) =>
  messages.flatMap((m) => (m.role === "tool" ? [[m.toolCallId, m.content] as const] : []));
const isAwaiting = (value: unknown) => JSON.stringify(value).includes("AwaitingApproval");

describe("approval by events", () => {
  it("asks with callId, name and arguments, waits, and runs the tool once approved", async () => {
    const a = agent([{ toolCalls: [deleteCall("call_rm", "/tmp/old.log")] }, { content: "Deleted." }]);
    const requested = await nextEvent(a.actor, "guard.approval.requested");
    expect(requested).toMatchObject({
      callId: "call_rm",
      name: "delete_file",
      arguments: '{"path":"/tmp/old.log"}',
      reason: "delete_file needs approval before it runs (it is tagged destructive)",
      agent: "ReActAgent",
    });
    expect(isAwaiting(a.actor.getSnapshot().value)).toBe(true);
    expect(a.deleted).toEqual([]);

    a.actor.send({ type: "guard.approve", callId: "call_rm" });
    const output = await a.done;
    expect(a.deleted).toEqual([{ path: "/tmp/old.log" }]);
    expect(output.finalAnswer).toBe("Deleted.");
    expect(of(a.events, "guard.approval.decided")).toMatchObject([{ callId: "call_rm", decision: "approved", edited: false }]);
    expect(a.model.requests[1]!.messages.at(-1)).toMatchObject({ role: "tool", toolCallId: "call_rm", content: "deleted /tmp/old.log" });
  });

  it("a rejection with a reason reaches the model and the tool never runs", async () => {
    const a = agent([{ toolCalls: [deleteCall("call_rm", "/home")] }, { content: "OK, I will not." }]);
    await nextEvent(a.actor, "guard.approval.requested");
    a.actor.send({ type: "guard.reject", callId: "call_rm", reason: "that is my home directory" });
    const output = await a.done;
    expect(a.deleted).toEqual([]);
    expect(output.status).toBe("succeeded");
    expect(a.model.requests[1]!.messages.at(-1)).toEqual({
      role: "tool",
      toolCallId: "call_rm",
      name: "delete_file",
      content: "Call rejected: that is my home directory",
      isError: true,
    });
    expect(of(a.events, "guard.approval.decided")).toMatchObject([{ callId: "call_rm", decision: "rejected", reason: "that is my home directory" }]);
    expect(of(a.events, "tool.call.denied")).toMatchObject([{ callId: "call_rm", decision: "rejected" }]);
  });

  it("approval may edit the arguments: invalid edits are refused and the call stays pending; a valid edit is what the tool gets", async () => {
    const a = agent([{ toolCalls: [deleteCall("call_rm", "/")] }, { content: "Deleted the log instead." }]);
    await nextEvent(a.actor, "guard.approval.requested");

    a.actor.send({ type: "guard.approve", callId: "call_rm", args: { path: 42 } });
    a.actor.send({ type: "guard.approve", callId: "call_rm", args: { path: "" } });
    a.actor.send({ type: "guard.approve", callId: "call_rm", args: "{not json" });
    const refused = of(a.events, "guard.approval.refused");
    expect(refused.map((e) => e.callId)).toEqual(["call_rm", "call_rm", "call_rm"]);
    expect(refused[0]!.reason).toMatch(/^the edited arguments do not fit delete_file: path: /);
    expect(refused[1]!.reason).toMatch(/^the edited arguments do not fit delete_file: path: /);
    expect(refused[2]!.reason).toBe("the edited arguments are not valid JSON");
    // Nothing changed: still waiting, still pending, nothing ran.
    const snapshot = a.actor.getSnapshot();
    expect(isAwaiting(snapshot.value)).toBe(true);
    expect(snapshot.context.loop.decisions).toMatchObject([{ callId: "call_rm", status: "pending" }]);
    expect(snapshot.context.loop.decisions[0]!.editedArguments).toBeUndefined();
    expect(a.deleted).toEqual([]);

    a.actor.send({ type: "guard.approve", callId: "call_rm", args: { path: "/tmp/app.log" } });
    const output = await a.done;
    expect(a.deleted).toEqual([{ path: "/tmp/app.log" }]);
    expect(of(a.events, "guard.approval.decided")).toMatchObject([{ callId: "call_rm", decision: "approved", edited: true }]);
    expect(of(a.events, "tool.call.started")).toMatchObject([{ callId: "call_rm", arguments: '{"path":"/tmp/app.log"}' }]);
    expect(toolAnswers(output.messages)).toEqual([["call_rm", "deleted /tmp/app.log"]]);
  });

  it("edited arguments may also be sent as JSON text", async () => {
    const a = agent([{ toolCalls: [deleteCall("call_rm", "/")] }, { content: "ok" }]);
    await nextEvent(a.actor, "guard.approval.requested");
    a.actor.send({ type: "guard.approve", callId: "call_rm", args: '{"path":"/tmp/x"}' });
    await a.done;
    expect(a.deleted).toEqual([{ path: "/tmp/x" }]);
  });

  it("approving or rejecting an unknown or already decided call id changes nothing and is reported", async () => {
    const a = agent([{ toolCalls: [deleteCall("rm_a", "/tmp/a"), deleteCall("rm_b", "/tmp/b")] }, { content: "done" }]);
    await nextEvent(a.actor, "guard.approval.requested");
    a.actor.send({ type: "guard.approve", callId: "rm_a" });
    const before = JSON.stringify(a.actor.getSnapshot().context);

    a.actor.send({ type: "guard.approve", callId: "nope" });
    a.actor.send({ type: "guard.reject", callId: "nope", reason: "x" });
    a.actor.send({ type: "guard.approve", callId: "rm_a" });
    a.actor.send({ type: "guard.reject", callId: "rm_a" });

    expect(JSON.stringify(a.actor.getSnapshot().context)).toBe(before);
    expect(of(a.events, "guard.approval.refused").map((e) => [e.callId, e.reason])).toEqual([
      ["nope", 'no call with id "nope" is waiting for approval'],
      ["nope", 'no call with id "nope" is waiting for approval'],
      ["rm_a", 'call "rm_a" was already decided (approved)'],
      ["rm_a", 'call "rm_a" was already decided (approved)'],
    ]);
    expect(of(a.events, "guard.approval.decided")).toHaveLength(1);

    a.actor.send({ type: "guard.approve", callId: "rm_b" });
    await a.done;
    expect(a.deleted.map((d) => d.path)).toEqual(["/tmp/a", "/tmp/b"]);
  });

  it("a late decision for a call of a batch that already moved on is reported, not dropped", async () => {
    const a = agent([{ toolCalls: [deleteCall("rm", "/tmp/a")] }, { content: "done" }]);
    await nextEvent(a.actor, "guard.approval.requested");
    a.actor.send({ type: "guard.approve", callId: "rm" });
    // The batch is executing now; a second decision for the same call must not go unnoticed.
    expect(isAwaiting(a.actor.getSnapshot().value)).toBe(false);
    a.actor.send({ type: "guard.reject", callId: "rm", reason: "changed my mind" });
    a.actor.send({ type: "guard.approve", callId: "never-asked" });
    await a.done;
    expect(a.deleted).toEqual([{ path: "/tmp/a" }]);
    expect(of(a.events, "guard.approval.refused").map((e) => [e.callId, e.reason])).toEqual([
      ["rm", 'call "rm" was already decided (approved)'],
      ["never-asked", 'no call with id "never-asked" is waiting for approval'],
    ]);
  });

  it("several pending calls are decided independently; the batch runs only when all are decided", async () => {
    const a = agent([
      {
        toolCalls: [
          deleteCall("rm_a", "/tmp/a"),
          { id: "ls", name: "list_dir", arguments: { path: "/tmp" } },
          { id: "get", name: "fetch_url", arguments: { url: "https://example.com" } },
          deleteCall("rm_b", "/tmp/b"),
        ],
      },
      { content: "done" },
    ]);
    const requested: string[] = [];
    a.actor.on("guard.approval.requested", (e) => requested.push(e.callId));
    await nextEvent(a.actor, "guard.approval.requested");
    expect(requested).toEqual(["rm_a", "get", "rm_b"]);

    a.actor.send({ type: "guard.approve", callId: "rm_b" });
    a.actor.send({ type: "guard.reject", callId: "get", reason: "no network today" });
    // One call is still undecided: nothing has run, not even the allowed list_dir.
    expect(isAwaiting(a.actor.getSnapshot().value)).toBe(true);
    expect(a.actor.getSnapshot().context.loop.decisions.map((d) => [d.callId, d.status])).toEqual([
      ["rm_a", "pending"],
      ["ls", "allowed"],
      ["get", "rejected"],
      ["rm_b", "approved"],
    ]);
    expect([a.deleted, a.listed, a.fetched]).toEqual([[], [], []]);

    a.actor.send({ type: "guard.approve", callId: "rm_a" });
    const output = await a.done;
    expect(a.deleted.map((d) => d.path)).toEqual(["/tmp/a", "/tmp/b"]);
    expect(a.listed).toEqual(["/tmp"]);
    expect(a.fetched).toEqual([]);
    expect(toolAnswers(output.messages)).toEqual([
      ["rm_a", "deleted /tmp/a"],
      ["ls", "a.txt b.txt in /tmp"],
      ["get", "Call rejected: no network today"],
      ["rm_b", "deleted /tmp/b"],
    ]);
  });
});

describe("approval timeouts", () => {
  it("a call nobody approves in time is rejected automatically and the run goes on", async () => {
    const a = agent([{ toolCalls: [deleteCall("rm", "/tmp/a")] }, { content: "Nobody approved; skipped." }], [
      requireApproval({ tools: ["delete_file"], timeoutMs: 50 }),
    ]);
    const requested = await nextEvent(a.actor, "guard.approval.requested");
    expect(requested).toMatchObject({ callId: "rm", deadline: expect.any(Number) });
    const output = await a.done;
    expect(output.status).toBe("succeeded");
    expect(a.deleted).toEqual([]);
    expect(toolAnswers(output.messages)).toEqual([["rm", "Call rejected: no approval arrived before the deadline"]]);
    expect(of(a.events, "guard.approval.decided")).toMatchObject([{ callId: "rm", decision: "rejected", reason: "no approval arrived before the deadline" }]);
    expect(a.model.requests).toHaveLength(2);
  });

  it("only the calls past their deadline expire; the others keep waiting for a decision", async () => {
    const a = agent(
      [{ toolCalls: [deleteCall("rm", "/tmp/a"), { id: "get", name: "fetch_url", arguments: { url: "https://example.com" } }] }, { content: "done" }],
      [requireApproval({ tools: ["delete_file"], timeoutMs: 50 }), requireApproval({ tools: ["fetch_url"] })],
    );
    const expired = await nextEvent(a.actor, "guard.approval.decided");
    expect(expired).toMatchObject({ callId: "rm", decision: "rejected" });
    expect(isAwaiting(a.actor.getSnapshot().value)).toBe(true);
    expect(a.actor.getSnapshot().context.loop.decisions.map((d) => d.status)).toEqual(["rejected", "pending"]);

    a.actor.send({ type: "guard.approve", callId: "get" });
    const output = await a.done;
    expect(a.fetched).toEqual(["https://example.com"]);
    expect(a.deleted).toEqual([]);
    expect(toolAnswers(output.messages).map(([id]) => id)).toEqual(["rm", "get"]);
  });

  it('with onTimeout: "fail" the run ends Failed with reason "approvalTimeout"', async () => {
    const a = agent([{ toolCalls: [deleteCall("rm", "/tmp/a")] }, { content: "never reached" }], [
      requireApproval({ effectTags: ["destructive"], timeoutMs: 50, onTimeout: "fail" }),
    ]);
    const output = await a.done;
    expect(output.status).toBe("failed");
    expect(output.termination).toMatchObject({ reason: "approvalTimeout" });
    expect(a.deleted).toEqual([]);
    expect(a.model.requests).toHaveLength(1);
    expect(of(a.events, "loop.terminated")).toMatchObject([{ status: "failed", reason: "approvalTimeout" }]);
  });

  it("a decision that arrives before the deadline wins and the timer is dropped", async () => {
    const a = agent([{ toolCalls: [deleteCall("rm", "/tmp/a")] }, { content: "done" }], [
      requireApproval({ tools: ["delete_file"], timeoutMs: 60_000, onTimeout: "fail" }),
    ]);
    await nextEvent(a.actor, "guard.approval.requested");
    a.actor.send({ type: "guard.approve", callId: "rm" });
    const output = await a.done;
    expect(output.status).toBe("succeeded");
    expect(a.deleted).toEqual([{ path: "/tmp/a" }]);
  });
});
