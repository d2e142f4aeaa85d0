import { createActor } from "xstate";
import { z } from "zod";
import type { Guard } from "../../actors/guard.js";
import type { AgentEmitted } from "../../machines/contract/events.js";
import type { ReactMachine } from "../../machines/react-machine.js";
import { defineTool, type Tool } from "../../tools/tool.js";

/** A guard that sends every call of the named tool to approval (optionally with a time limit). */
export function approvalFor(name: string, options: { timeoutMs?: number } = {}): Guard {
  return (call) =>
    call.name === name
      ? { decision: "pending", reason: `${call.name} needs a person's approval`, ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}) }
      : { decision: "allow" };
}

/** A tool with a visible side effect: every execution is counted (and its arguments kept). */
export function countingTool(name = "record", options: { idempotent?: boolean; execute?: (note: string) => unknown } = {}) {
  const runs: string[] = [];
  const tool: Tool = defineTool({
    name,
    description: "Write a note somewhere durable",
    parameters: z.object({ note: z.string() }),
    ...(options.idempotent ? { idempotent: true } : {}),
    execute: ({ note }) => {
      runs.push(note);
      return options.execute ? options.execute(note) : `recorded ${note}`;
    },
  });
  return { tool, runs };
}

type AgentActor = ReturnType<typeof createActor<ReactMachine>>;

/** Resolve with the first snapshot (now or later) that satisfies the predicate. */
export function waitFor(actor: AgentActor, predicate: (snapshot: ReturnType<AgentActor["getSnapshot"]>) => boolean) {
  return new Promise<ReturnType<AgentActor["getSnapshot"]>>((resolve, reject) => {
    const check = (snapshot: ReturnType<AgentActor["getSnapshot"]>) => {
      if (!predicate(snapshot)) return false;
      queueMicrotask(() => sub.unsubscribe());
      resolve(snapshot);
      return true;
    };
    const sub = actor.subscribe({ next: check, error: reject });
    check(actor.getSnapshot());
  });
}

export const awaitingApproval = (snapshot: { matches: (value: never) => boolean }) =>
  snapshot.matches({ Evaluating: { ChildRunning: { ToolExecutor: "AwaitingApproval" } } } as never);

export const done = (snapshot: { status: string }) => snapshot.status === "done";

/** Every emitted event of an actor, in order. */
export function collect(actor: AgentActor): AgentEmitted[] {
  const events: AgentEmitted[] = [];
  actor.on("*", (event) => events.push(event as AgentEmitted));
  return events;
}
