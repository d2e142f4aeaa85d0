import { describe, expect, it } from "vitest";
import { createActor } from "xstate";
import { z } from "zod";
import type { Guard } from "../../actors/guard.js";
import { human } from "../../actors/messages.js";
import { agentTool } from "../../machines/composition/agent-tool.js";
import { pendingApprovals } from "../../machines/contract/approvals.js";
import type { AgentEmitted } from "../../machines/contract/events.js";
import { persistAgent, restoreAgent, runStatusOf } from "../../machines/persistence/persistence.js";
import { createReactMachine, type ReactMachine } from "../../machines/react-machine.js";
import { runAgent } from "../../machines/runner.js";
import { scriptedModel } from "../../testing/scripted-model.js";
import { defineTool } from "../../tools/tool.js";

/** A tool with a visible side effect, counted. */
function publisher() {
  const runs: string[] = [];
  const tool = defineTool({
    name: "publish",
    description: "Publish a text",
    parameters: z.object({ text: z.string() }),
    execute: ({ text }) => {
      runs.push(text);
      return `published ${text}`;
    },
  });
  return { tool, runs };
}

const needsApproval =
  (options: { timeoutMs?: number } = {}): Guard =>
  (call) =>
    call.name === "publish" ? { decision: "pending", reason: "publishing needs a person", ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}) } : { decision: "allow" };

/** Top → Middle → Inner; Inner publishes after approval. Every agent answers from its own script. */
function threeLevels(options: { timeoutMs?: number; innerAfter?: string } = {}) {
  const { tool, runs } = publisher();
  const innerModel = scriptedModel([{ toolCalls: [{ id: "i1", name: "publish", arguments: { text: "hello" } }] }, { content: options.innerAfter ?? "inner: published" }]);
  const inner = createReactMachine({ name: "Inner", modelClient: innerModel, tools: [tool], constraints: [needsApproval(options)], configFile: false });
  const middleModel = scriptedModel([{ toolCalls: [{ id: "m1", name: "ask_inner", arguments: { input: "publish hello" } }] }, { content: "middle: done" }]);
  const middle = createReactMachine({ name: "Middle", modelClient: middleModel, tools: [agentTool(inner, { name: "ask_inner", description: "Ask the inner agent" })], configFile: false });
  const topModel = scriptedModel([{ toolCalls: [{ id: "t1", name: "ask_middle", arguments: { input: "get hello published" } }] }, { content: "top: done" }]);
  const top = createReactMachine({ name: "Top", modelClient: topModel, tools: [agentTool(middle, { name: "ask_middle", description: "Ask the middle agent" })], configFile: false });
  return { top, runs, models: { innerModel, middleModel, topModel } };
}

const PATH = [
  { agent: "Middle", callId: "t1" },
  { agent: "Inner", callId: "m1" },
];

function waitUntil(actor: ReturnType<typeof createActor<ReactMachine>>, predicate: (snapshot: ReturnType<typeof actor.getSnapshot>) => boolean) {
  return new Promise<ReturnType<typeof actor.getSnapshot>>((resolve) => {
    const check = (snapshot: ReturnType<typeof actor.getSnapshot>) => predicate(snapshot) && (resolve(snapshot), true);
    if (check(actor.getSnapshot())) return;
    const sub = actor.subscribe((snapshot) => check(snapshot) && queueMicrotask(() => sub.unsubscribe()));
  });
}

const awaiting = (snapshot: { value: unknown; status: string }) => runStatusOf(snapshot) === "awaitingApproval";

describe("approvals bubble up from nested agents", () => {
  it("the top agent waits in AwaitingApproval with the nested call; the approval sent to it reaches the agent two levels down", async () => {
    const { top, runs, models } = threeLevels();
    const actor = createActor(top, { input: { messages: [human("go")] } });
    const events: AgentEmitted[] = [];
    actor.on("*", (e) => events.push(e as AgentEmitted));
    actor.start();
    const waiting = await waitUntil(actor, awaiting);
    expect(waiting.matches({ Evaluating: { ChildRunning: { ToolExecutor: "AwaitingApproval" } } })).toBe(true);
    expect(pendingApprovals(waiting)).toEqual([
      { callId: "i1", name: "publish", arguments: JSON.stringify({ text: "hello" }), reason: "publishing needs a person", agentPath: PATH },
    ]);
    // The request reached the top's listeners with the same path.
    expect(events.find((e) => e.type === "guard.approval.requested")).toMatchObject({ callId: "i1", agent: "Inner", agentPath: PATH });
    expect(runs).toEqual([]);

    actor.send({ type: "guard.approve", callId: "i1", agentPath: PATH });
    const done = await waitUntil(actor, (s) => s.status === "done");
    expect(done.output).toMatchObject({ status: "succeeded", finalAnswer: "top: done" });
    expect(runs).toEqual(["hello"]);
    expect(events.find((e) => e.type === "guard.approval.decided")).toMatchObject({ callId: "i1", decision: "approved", agentPath: PATH });
    for (const model of Object.values(models)) expect(model.remaining).toBe(0);
    // The nested run's observation travelled back up: Middle read Inner's answer, Top read Middle's.
    expect(models.middleModel.requests[1]!.messages.at(-1)).toMatchObject({ role: "tool", content: "inner: published" });
    expect(models.topModel.requests[1]!.messages.at(-1)).toMatchObject({ role: "tool", content: "middle: done" });
  });

  it("a decision without agentPath is routed by call id; a wrong path is refused, not dropped", async () => {
    const { top, runs } = threeLevels();
    const actor = createActor(top, { input: { messages: [human("go")] } });
    const refused: AgentEmitted[] = [];
    actor.on("guard.approval.refused", (e) => refused.push(e as AgentEmitted));
    actor.start();
    await waitUntil(actor, awaiting);
    actor.send({ type: "guard.reject", callId: "i1", agentPath: [{ agent: "Nobody", callId: "t1" }], reason: "wrong" });
    expect(refused).toHaveLength(1);
    expect(refused[0]).toMatchObject({ agent: "Top", callId: "i1" });
    expect(pendingApprovals(actor.getSnapshot())).toHaveLength(1);

    actor.send({ type: "guard.reject", callId: "i1", reason: "not today" });
    const done = await waitUntil(actor, (s) => s.status === "done");
    expect(done.output?.status).toBe("succeeded");
    expect(runs).toEqual([]);
  });

  it("runAgent's onApproval answers nested calls too", async () => {
    const { top, runs } = threeLevels();
    const asked: unknown[] = [];
    const output = await runAgent(top, { messages: [human("go")] }, { onApproval: (request) => (asked.push(request), { approve: true }) });
    expect(output.finalAnswer).toBe("top: done");
    expect(asked).toEqual([expect.objectContaining({ callId: "i1", agentPath: PATH })]);
    expect(runs).toEqual(["hello"]);
  });

  it("a nested approval deadline holds: no decision, the nested call is rejected and the run goes on", async () => {
    const { top, runs, models } = threeLevels({ timeoutMs: 20 });
    const actor = createActor(top, { input: { messages: [human("go")] } });
    actor.start();
    const waiting = await waitUntil(actor, awaiting);
    expect(pendingApprovals(waiting)[0]?.deadline).toEqual(expect.any(Number));
    const done = await waitUntil(actor, (s) => s.status === "done");
    expect(done.output?.status).toBe("succeeded");
    expect(runs).toEqual([]);
    expect(models.innerModel.requests[1]!.messages.at(-1)).toMatchObject({ role: "tool", content: expect.stringMatching(/no approval arrived before the deadline/) });
  });

  it("a saved run whose nested agent lacks logic for one of its children is refused, naming where", async () => {
    const { top } = threeLevels();
    const actor = createActor(top, { input: { messages: [human("go")] } });
    actor.start();
    await waitUntil(actor, awaiting);
    const saved = persistAgent(actor);
    actor.stop();
    // Restorable as saved...
    expect(() => restoreAgent(top, structuredClone(saved))).not.toThrow();
    // ...but not once a child two levels down names logic nobody provides.
    const damaged = structuredClone(saved);
    type Children = Record<string, { src: string; snapshot: { children: Children } }>;
    const middle = (damaged.snapshot["children"] as Children)["Top.agent"]!;
    middle.snapshot.children["Middle.agent"]!.snapshot.children["Inner.approvalTimer"]!.src = "noSuchLogic";
    expect(() => restoreAgent(top, damaged)).toThrow(/"Top\.agent › Middle\.agent › Inner\.approvalTimer" uses logic "noSuchLogic"/);
  });
});

describe("forged nested-agent events", () => {
  it("an agent.status or agent.emitted sent from outside with a bad payload changes nothing; the checkpoint restores and the run finishes", async () => {
    const { top, runs } = threeLevels();
    const actor = createActor(top, { input: { messages: [human("go")] } });
    actor.start();
    const waiting = await waitUntil(actor, awaiting);
    const before = JSON.stringify(waiting.context);
    const nestedId = "Top.agent";
    const forged: unknown[] = [
      { type: "agent.status", from: nestedId, pending: "not a list", moment: null },
      { type: "agent.status", from: nestedId, pending: [{ callId: 7, name: null }], moment: null },
      { type: "agent.status", from: nestedId, pending: [], moment: { deep: true } },
      { type: "agent.emitted", from: nestedId, event: { type: "reply.completed", usage: { promptTokens: -5, completionTokens: Number.NaN, totalTokens: "x" } } },
      { type: "agent.emitted", from: nestedId, event: { type: "reply.completed", usage: { promptTokens: 1e300, completionTokens: 1, totalTokens: 1e300 } } },
    ];
    for (const event of forged) actor.send(event as never);
    expect(JSON.stringify(actor.getSnapshot().context)).toBe(before);
    expect(pendingApprovals(actor.getSnapshot())).toEqual(pendingApprovals(waiting));

    // The next checkpoint restores, and the run itself carries on as if nothing had been sent.
    expect(() => restoreAgent(top, JSON.stringify(persistAgent(actor)))).not.toThrow();
    actor.send({ type: "guard.approve", callId: "i1", agentPath: PATH });
    const final = await waitUntil(actor, (s) => s.status === "done");
    expect(final.output).toMatchObject({ status: "succeeded", finalAnswer: "top: done" });
    expect(runs).toEqual(["hello"]);
  });
});
