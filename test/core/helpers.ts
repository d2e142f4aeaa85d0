import { createActor } from "xstate";
import { z } from "zod";
import type { AgentEmitted } from "../../machines/contract/events.js";
import type { ReactMachine } from "../../machines/react-machine.js";
import type { AgentInput } from "../../machines/contract/context.js";
import { defineTool, type Tool } from "../../tools/tool.js";

/** A tiny arithmetic tool: enough for loop tests without depending on the built-in calculator. */
export const multiply = defineTool({
  name: "multiply",
  description: "Multiply two numbers",
  parameters: z.object({ a: z.number(), b: z.number() }),
  parallelSafe: true,
  execute: ({ a, b }) => a * b,
});

export const add = defineTool({
  name: "add",
  description: "Add two numbers",
  parameters: z.object({ a: z.number(), b: z.number() }),
  parallelSafe: true,
  execute: ({ a, b }) => a + b,
});

/** Start an actor, collect every emitted event, and resolve with the final snapshot's output. */
export function startAgent(machine: ReactMachine, input: AgentInput) {
  const events: AgentEmitted[] = [];
  const actor = createActor(machine, { input });
  actor.on("*", (event) => events.push(event as AgentEmitted));
  const done = new Promise<NonNullable<ReturnType<typeof actor.getSnapshot>["output"]>>((resolve, reject) => {
    actor.subscribe({
      complete: () => resolve(actor.getSnapshot().output!),
      error: reject,
    });
  });
  actor.start();
  return { actor, events, done };
}

/** Resolve when the agent emits an event of this type (the first one from now on). */
export function nextEvent<T extends AgentEmitted["type"]>(
  actor: { on: (type: T, handler: (event: Extract<AgentEmitted, { type: T }>) => void) => { unsubscribe(): void } },
  type: T,
): Promise<Extract<AgentEmitted, { type: T }>> {
  return new Promise((resolve) => {
    const sub = actor.on(type, (event) => {
      sub.unsubscribe();
      resolve(event);
    });
  });
}

/**
 * An idempotent tool with `retries` whose attempts answer from `script` in turn: an Error is thrown,
 * "hang" never settles, text is the answer (a call past the script throws).
 */
export function retriedTool(name: string, script: readonly (string | Error | "hang")[], options: { retries: number; retryDelayMs?: number; timeoutMs?: number }): { tool: Tool; calls: () => number } {
  let calls = 0;
  const tool = defineTool({
    name,
    description: `${name}: answers from a script, attempt by attempt`,
    parameters: z.object({}),
    idempotent: true,
    ...options,
    execute: () => {
      const step = script[calls++] ?? new Error("the script ran out");
      if (step === "hang") return new Promise(() => undefined);
      if (step instanceof Error) throw step;
      return step;
    },
  });
  return { tool, calls: () => calls };
}
