/**
 * Example: model-based tests of your own agent.
 *
 * `generateAgentPaths` explores your agent's statechart and hands back paths from start to
 * finish that together cover every state and transition; each path becomes one vitest test
 * that replays it on a live actor of your machine (your tools, your guards, the real tool
 * executor, a scripted model). Give it:
 * - `scripts`: model turns worth trying wherever the agent asks the model (a model error is
 *   tried too). Give tools valid arguments: a run that ends with a tool is predicted to succeed.
 * - `policy`: what your guards are meant to decide. The model follows it, and each replay runs
 *   your real guards and fails if they decide differently.
 * Keep `maxIterations` small in the machine under test: the paths grow with it.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createReactMachine, defineTool, type Guard } from "../index.js";
import { scriptedModel } from "../testing.js";
import { generateAgentPaths, type Policy } from "../testing.js";

const add = defineTool({
  name: "add",
  description: "Add two numbers",
  parameters: z.object({ a: z.number(), b: z.number() }),
  execute: ({ a, b }) => a + b,
});
const sendEmail = defineTool({
  name: "send_email",
  description: "Email someone",
  parameters: z.object({ to: z.string(), body: z.string() }),
  execute: ({ to }) => `sent to ${to}`,
});
const wireMoney = defineTool({
  name: "wire_money",
  description: "Wire money",
  parameters: z.object({ amount: z.number() }),
  execute: ({ amount }) => `wired ${amount}`,
});

const TEN_MINUTES = 10 * 60_000;

/** Your guards, as the agent runs them. */
const constraints: Guard[] = [
  (call) => (call.name === "send_email" ? { decision: "pending", reason: "a person reads every email first", timeoutMs: TEN_MINUTES } : { decision: "allow" }),
  (call) => (call.name === "wire_money" ? { decision: "pending", timeoutMs: TEN_MINUTES, onTimeout: "fail" } : { decision: "allow" }),
];

/** What those guards should decide: the yardstick the replays hold them to. */
const policy: Policy = (call) => {
  if (call.name === "send_email") return { decision: "pending", timeoutMs: TEN_MINUTES };
  if (call.name === "wire_money") return { decision: "pending", timeoutMs: TEN_MINUTES, onTimeout: "fail" };
  return { decision: "allow" };
};

const agent = createReactMachine({
  // Your real model client goes here; replays never call it (each path brings its own turns).
  modelClient: scriptedModel([]),
  tools: [add, sendEmail, wireMoney],
  constraints,
  config: { maxIterations: 2, maxBudgetTokens: 5_000 },
});

const { paths, coverage } = generateAgentPaths(agent, {
  scripts: [
    { content: "2 + 2 = 4" },
    { toolCalls: [{ name: "add", arguments: { a: 2, b: 2 } }] },
    { toolCalls: [{ name: "send_email", arguments: { to: "ops@example.com", body: "4" } }] },
    { toolCalls: [{ name: "wire_money", arguments: { amount: 4 } }] },
  ],
  policy,
});

describe("example: my agent, path by path", () => {
  it("covers every state and transition of its chart", () => {
    console.log(`example agent: ${coverage.text}, ${paths.length} paths`);
    expect(coverage.missing).toEqual([]);
  });

  for (const path of paths) {
    it(path.description, async () => {
      const { output } = await path.replay();
      expect(output.status).toBe(path.finalState.value === "Succeeded" ? "succeeded" : "failed");
      expect(output.termination?.reason).toBe(path.finalState.reason);
    });
  }
});
