import { describe, expect, it } from "vitest";
import { z } from "zod";
import type { Guard } from "../../actors/guard.js";
import { agentTool } from "../../machines/composition/agent-tool.js";
import { handoff } from "../../machines/composition/handoff.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { generateAgentPaths, type ModelTurnScript, type Policy } from "../../testing/model-based.js";
import { scriptedModel } from "../../testing/scripted-model.js";
import { defineTool } from "../../tools/tool.js";

/**
 * The chart of an agent with an agent tool and a handoff: Delegating, HandingOff and their ways
 * in and out of AwaitingApproval. The nested agents are played by the paths (they answer, fail,
 * crash, reply, wait for approval and stop waiting when the path says so).
 */

const helper = createReactMachine({ name: "Helper", modelClient: scriptedModel([]), configFile: false });
const specialist = createReactMachine({ name: "Specialist", modelClient: scriptedModel([]), configFile: false });

const tools = [
  defineTool({ name: "add", description: "Add two numbers", parameters: z.object({ a: z.number(), b: z.number() }), execute: ({ a, b }) => a + b }),
  defineTool({ name: "send_email", description: "Send an email (needs approval)", parameters: z.object({}), execute: () => "sent" }),
  defineTool({ name: "wire", description: "Wire money (approval within a deadline, else rejected)", parameters: z.object({}), execute: () => "wired" }),
  defineTool({ name: "launch", description: "Launch (approval within a deadline, else the run fails)", parameters: z.object({}), execute: () => "launched" }),
  agentTool(helper, { name: "ask_helper", description: "Ask the helper agent" }),
  handoff(specialist),
];

const policy: Policy = (call) => {
  if (call.name === "send_email") return { decision: "pending", reason: "emails need approval" };
  if (call.name === "wire") return { decision: "pending", timeoutMs: 60_000, onTimeout: "reject" };
  if (call.name === "launch") return { decision: "pending", timeoutMs: 60_000, onTimeout: "fail" };
  return { decision: "allow" };
};

const scripts: ModelTurnScript[] = [
  { content: "Done." },
  { toolCalls: [{ name: "add", arguments: { a: 1, b: 2 } }] },
  { toolCalls: [{ name: "wire", arguments: {} }] },
  { toolCalls: [{ name: "launch", arguments: {} }] },
  { toolCalls: [{ name: "ask_helper", arguments: { input: "help" } }] },
  { toolCalls: [{ name: "transfer_to_Specialist", arguments: {} }] },
  { label: "calls ask_helper with arguments that do not fit", toolCalls: [{ name: "ask_helper", arguments: {} }] },
  { label: "calls ask_helper and hands off in one reply", toolCalls: [{ name: "ask_helper", arguments: { input: "help" } }, { name: "transfer_to_Specialist", arguments: {} }] },
  { label: "calls send_email and ask_helper in one reply", toolCalls: [{ name: "send_email", arguments: {} }, { name: "ask_helper", arguments: { input: "help" } }] },
];

const constraints = [policy as Guard];

function createComposer() {
  return createReactMachine({ name: "Composer", modelClient: scriptedModel([]), tools, constraints, config: { maxIterations: 2, maxBudgetTokens: 1_000 }, configFile: false });
}

const { paths, coverage, violations } = generateAgentPaths(createComposer(), { scripts, policy });

describe("model-based: agent tools and handoffs", () => {
  it("covers every state and transition of the chart, the new ones included", () => {
    expect(violations).toEqual([]);
    expect(coverage.missing).toEqual([]);
    expect(coverage.text).toMatch(/^states (\d+)\/\1 \(100%\), transitions (\d+)\/\2 \(100%\)$/);
    const keys = new Set(paths.flatMap((path) => path.steps.map((step) => step.label)));
    expect([...keys]).toEqual(expect.arrayContaining(["Helper waits for approval", "approve the nested agent's nested_tool", "Specialist answers"]));
  });

  describe("each path replays live", () => {
    for (const path of paths) it(path.description, async () => {
      const { output } = await path.replay();
      expect(output.status).toBe(path.finalState.value === "Succeeded" ? "succeeded" : "failed");
    });
  });
});
