// The agents of the run-queue tests, as a factory over jianmu's exports: the in-process tests pass
// the TypeScript sources, the worker child processes (worker-child.mjs) pass the built dist/. Plain
// JavaScript so that both can load it. Each run's script rides in its first user message (see
// script-model.ts): which tools to call in which order, and how long the model takes.
import { setTimeout as sleep } from "node:timers/promises";
import { z } from "zod";

/**
 * @param {object} jianmu  { createReactMachine, defineTool, ModelClient, requireApproval }
 * @param {object} options { baseURL, journal, effect(note) -> Promise|void, approvalTimeoutMs? }
 */
export function makeAgents(jianmu, options) {
  const { createReactMachine, defineTool, ModelClient, requireApproval } = jianmu;
  const modelClient = ModelClient.resolve({ baseURL: options.baseURL, apiKey: "test-key", model: "scripted", stream: false, resilience: { maxRetries: 0 } });
  const record = defineTool({
    name: "record",
    description: "Write a note somewhere durable (a side effect counted in the database)",
    parameters: z.object({ note: z.string(), sleepMs: z.number().int().min(0).optional() }),
    execute: async ({ note, sleepMs }) => {
      if (sleepMs) await sleep(sleepMs);
      await options.effect(note);
      return `recorded ${note}`;
    },
  });
  const pay = defineTool({
    name: "pay",
    description: "Pay an invoice (needs a person's approval)",
    parameters: z.object({ note: z.string() }),
    execute: async ({ note }) => {
      await options.effect(note);
      return `paid ${note}`;
    },
  });
  const common = { modelClient, journal: options.journal, configFile: false, config: { maxIterations: 8 } };
  return {
    basic: createReactMachine({ ...common, name: "basic", tools: [record] }),
    approver: createReactMachine({ ...common, name: "approver", tools: [record, pay], constraints: [requireApproval({ tools: ["pay"] })] }),
    deadline: createReactMachine({
      ...common,
      name: "deadline",
      tools: [record, pay],
      constraints: [requireApproval({ tools: ["pay"], timeoutMs: options.approvalTimeoutMs ?? 1_500 })],
    }),
  };
}
