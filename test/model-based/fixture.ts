import { z } from "zod";
import type { Guard } from "../../actors/guard.js";
import { createReactMachine, type ReactMachineOptions } from "../../machines/react-machine.js";
import { scriptedModel } from "../../testing/scripted-model.js";
import type { ModelTurnScript, Policy } from "../../testing/model-based.js";
import { defineTool } from "../../tools/tool.js";

/**
 * The agent the model-based suite explores: one tool for each way the guard step can decide,
 * a returnDirect tool, one that throws, two iterations, a token budget and a first-round
 * toolChoice. Each tool records the call ids it really ran, so tests can compare them with the
 * calls the invariant checker authorized.
 */

export const executed: string[] = [];

const noArgs = z.object({});
const record = (ctx: { callId: string }) => executed.push(ctx.callId);

export const tools = [
  defineTool({
    name: "add",
    description: "Add two numbers",
    parameters: z.object({ a: z.number(), b: z.number() }),
    parallelSafe: true,
    execute: ({ a, b }, ctx) => (record(ctx), a + b),
  }),
  defineTool({ name: "delete_all", description: "Delete everything (always denied)", parameters: noArgs, execute: (_args, ctx) => (record(ctx), "deleted") }),
  defineTool({ name: "send_email", description: "Send an email (needs approval)", parameters: noArgs, execute: (_args, ctx) => (record(ctx), "sent") }),
  defineTool({
    name: "transfer_funds",
    description: "Move money (needs approval within a deadline, else rejected)",
    parameters: noArgs,
    execute: (_args, ctx) => (record(ctx), "moved"),
  }),
  defineTool({
    name: "launch",
    description: "Launch (needs approval within a deadline, else the run fails)",
    parameters: noArgs,
    execute: (_args, ctx) => (record(ctx), "launched"),
  }),
  defineTool({
    name: "final_answer",
    description: "Answer and end the run",
    parameters: z.object({ text: z.string() }),
    returnDirect: true,
    execute: ({ text }, ctx) => (record(ctx), text),
  }),
  defineTool({
    name: "flaky",
    description: "Always throws",
    parameters: noArgs,
    execute: (_args, ctx) => {
      record(ctx);
      throw new Error("flaky failed");
    },
  }),
];

/** The guards of the agent: the real Preflight step runs these. */
export const constraints: Guard[] = [
  (call) => (call.name === "delete_all" ? { decision: "deny", reason: "never delete everything" } : { decision: "allow" }),
  (call) => (call.name === "send_email" ? { decision: "pending", reason: "emails need approval" } : { decision: "allow" }),
  (call) => (call.name === "transfer_funds" ? { decision: "pending", timeoutMs: 60_000, onTimeout: "reject" } : { decision: "allow" }),
  (call) => (call.name === "launch" ? { decision: "pending", timeoutMs: 60_000, onTimeout: "fail" } : { decision: "allow" }),
];

/** What the guards above are expected to decide: the model's verdicts, and the yardstick for the real guard step. */
export const policy: Policy = (call) => {
  if (call.name === "delete_all") return { decision: "deny", reason: "never delete everything" };
  if (call.name === "send_email") return { decision: "pending", reason: "emails need approval" };
  if (call.name === "transfer_funds") return { decision: "pending", timeoutMs: 60_000, onTimeout: "reject" };
  if (call.name === "launch") return { decision: "pending", timeoutMs: 60_000, onTimeout: "fail" };
  return { decision: "allow" };
};

export const scripts: ModelTurnScript[] = [
  { content: "The answer is 3." },
  { toolCalls: [{ name: "add", arguments: { a: 1, b: 2 } }] },
  { toolCalls: [{ name: "delete_all", arguments: {} }] },
  { toolCalls: [{ name: "send_email", arguments: {} }] },
  { toolCalls: [{ name: "transfer_funds", arguments: {} }] },
  { toolCalls: [{ name: "launch", arguments: {} }] },
  { label: "calls add + send_email + transfer_funds in one batch", toolCalls: [{ name: "add", arguments: { a: 2, b: 2 } }, { name: "send_email", arguments: {} }, { name: "transfer_funds", arguments: {} }] },
  { toolCalls: [{ name: "final_answer", arguments: { text: "done" } }] },
  { toolCalls: [{ name: "flaky", arguments: {} }] },
  { label: "calls a tool that does not exist", toolCalls: [{ name: "no_such_tool", arguments: {} }] },
  { label: "calls add with arguments that are not JSON", toolCalls: [{ name: "add", arguments: "{not json" }] },
];

export const config = {
  maxIterations: 2,
  maxBudgetTokens: 1_000,
  toolChoice: "required",
  extraParams: { tool_choice: "required", seed: 7 },
} as const satisfies ReactMachineOptions["config"];

/** The agent under test (its own model client is never used: paths bring their scripts). */
export function createAgent(overrides: Partial<ReactMachineOptions> = {}) {
  return createReactMachine({ modelClient: scriptedModel([]), tools, constraints, config, ...overrides });
}
