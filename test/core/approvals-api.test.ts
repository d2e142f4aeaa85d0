import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { requireApproval } from "../../actors/guards/index.js";
import { human } from "../../actors/messages.js";
import { pendingApprovals } from "../../machines/contract/approvals.js";
import { persistAgent, restoreAgent } from "../../machines/persistence/persistence.js";
import { createReactMachine, reactConfigOf } from "../../machines/react-machine.js";
import { runAgent } from "../../machines/runner.js";
import { scriptedModel } from "../../testing/scripted-model.js";
import { defineTool } from "../../tools/tool.js";
import { nextEvent, startAgent } from "./helpers.js";

function sendTool() {
  const sent: string[] = [];
  const tool = defineTool({
    name: "send_email",
    description: "Send an email",
    parameters: z.object({ to: z.string() }),
    effectTags: ["network"],
    execute: ({ to }) => {
      sent.push(to);
      return `sent to ${to}`;
    },
  });
  return { sent, tool };
}

const script = () =>
  scriptedModel([
    { toolCalls: [{ id: "e1", name: "send_email", arguments: { to: "ann@example.com" } }, { id: "e2", name: "send_email", arguments: { to: "bob@example.com" } }] },
    { content: "done" },
  ]);

describe("approvals from code", () => {
  it("runAgent's onApproval decides each request: approve, approve with edited args, reject", async () => {
    const { sent, tool } = sendTool();
    const machine = createReactMachine({ modelClient: script(), tools: [tool], constraints: [requireApproval({ effectTags: ["network"] })] });
    const seen: string[] = [];
    const output = await runAgent(machine, { messages: [human("mail them")] }, {
      onApproval: async (request) => {
        seen.push(`${request.callId}:${request.name}:${request.arguments}`);
        return request.callId === "e1" ? { approve: true, args: { to: "ann@corp.example" } } : { approve: false, reason: "bob is on leave" };
      },
    });
    expect(seen).toEqual(['e1:send_email:{"to":"ann@example.com"}', 'e2:send_email:{"to":"bob@example.com"}']);
    expect(sent).toEqual(["ann@corp.example"]);
    expect(output.messages.filter((m) => m.role === "tool").map((m) => m.content)).toEqual(["sent to ann@corp.example", "Call rejected: bob is on leave"]);
  });

  it("an approver that throws rejects the call with its message", async () => {
    const { sent, tool } = sendTool();
    const machine = createReactMachine({ modelClient: script(), tools: [tool], constraints: [requireApproval({ tools: ["send_email"] })] });
    const output = await runAgent(machine, { messages: [human("mail")] }, { onApproval: () => Promise.reject(new Error("approval service down")) });
    expect(sent).toEqual([]);
    expect(output.messages.filter((m) => m.role === "tool").map((m) => m.content)).toEqual([
      "Call rejected: the approver failed: approval service down",
      "Call rejected: the approver failed: approval service down",
    ]);
  });

  it("pendingApprovals reads the waiting calls from a snapshot, and onApproval answers them after a restore", async () => {
    const { sent, tool } = sendTool();
    const model = script();
    const machine = createReactMachine({ modelClient: model, tools: [tool], constraints: [requireApproval({ tools: ["send_email"], reason: "outgoing mail" })] });
    const { actor } = startAgent(machine, { messages: [human("mail")] });
    await nextEvent(actor, "guard.approval.requested");
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(pendingApprovals(actor.getSnapshot())).toEqual([
      { callId: "e1", name: "send_email", arguments: '{"to":"ann@example.com"}', reason: "outgoing mail" },
      { callId: "e2", name: "send_email", arguments: '{"to":"bob@example.com"}', reason: "outgoing mail" },
    ]);
    const saved = JSON.parse(JSON.stringify(persistAgent(actor)));
    actor.stop();

    const output = await runAgent(machine, {}, { snapshot: restoreAgent(machine, saved), onApproval: () => ({ approve: true }) });
    expect(output.status).toBe("succeeded");
    expect(sent).toEqual(["ann@example.com", "bob@example.com"]);
    expect(model.requests).toHaveLength(2);
  });
});

describe("configFile", () => {
  it("false ignores jianmu.yaml and $JIANMU_CONFIG; a path picks a file", () => {
    const dir = mkdtempSync(join(tmpdir(), "jianmu-cfg-"));
    const file = join(dir, "agent.yaml");
    writeFileSync(file, "limits:\n  max_iterations: 3\n");
    const previous = process.env["JIANMU_CONFIG"];
    process.env["JIANMU_CONFIG"] = file;
    try {
      expect(reactConfigOf(createReactMachine({ modelClient: scriptedModel([]) }))?.maxIterations).toBe(3);
      expect(reactConfigOf(createReactMachine({ modelClient: scriptedModel([]), configFile: false }))?.maxIterations).toBe(10);
      delete process.env["JIANMU_CONFIG"];
      expect(reactConfigOf(createReactMachine({ modelClient: scriptedModel([]), configFile: file }))?.maxIterations).toBe(3);
    } finally {
      if (previous === undefined) delete process.env["JIANMU_CONFIG"];
      else process.env["JIANMU_CONFIG"] = previous;
    }
  });
});
