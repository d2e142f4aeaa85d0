import { setTimeout as sleep } from "node:timers/promises";
import { defineTool } from "jianmu";
import { z } from "zod";
import { lookupResult } from "./task.mjs";

/*
 * The two tools of the benchmark, with one body shared by both contenders so that tool work is
 * identical. `sleep` records when each call started and ended: the P=8 scenario measures how
 * long the whole batch took against one call.
 */

export const toolBodies = {
  lookup: async ({ query }) => lookupResult(query),
  sleep: async ({ ms }) => {
    const started = performance.now();
    await sleep(ms);
    sleepCalls.push({ started, ended: performance.now() });
    return `slept ${ms} ms`;
  },
};

/** Start and end of every `sleep` call since the last `takeSleepCalls()`. */
let sleepCalls = [];

export function takeSleepCalls() {
  const calls = sleepCalls;
  sleepCalls = [];
  return calls;
}

/** The same tools as jianmu tools (zod-validated arguments, parallel-safe). */
export const jianmuTools = [
  defineTool({
    name: "lookup",
    description: "Look up one item by name and return what is known about it.",
    parameters: z.object({ query: z.string().describe("the item to look up") }),
    parallelSafe: true,
    execute: (args) => toolBodies.lookup(args),
  }),
  defineTool({
    name: "sleep",
    description: "Wait for the given number of milliseconds.",
    parameters: z.object({ ms: z.number().int().min(0).describe("how long to wait") }),
    parallelSafe: true,
    execute: (args) => toolBodies.sleep(args),
  }),
];
