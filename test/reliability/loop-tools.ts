import type fc from "fast-check";
import { z } from "zod";
import { defineTool, type Tool } from "../../tools/tool.js";
import type { ArgsKind, ToolName } from "./loop-scenario.js";

/** One execution of a tool: what it got, and whether it has ended. */
export interface Execution {
  tool: string;
  callId: string;
  iteration: number;
  args: Record<string, unknown>;
  signal: AbortSignal;
  settled: boolean;
}

/** Big enough to exceed any generated `maxToolOutputChars` many times over. */
export const HUGE = 60_000;

/**
 * Waits until the fast-check scheduler releases this step (so the order of model replies, tool
 * completions and commands is the scheduler's choice), or rejects when the signal aborts.
 */
export function gate(scheduler: fc.Scheduler, label: string, signal: AbortSignal | undefined, onRelease: () => void): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason ?? new Error("aborted"));
    const onAbort = () => reject(signal?.reason ?? new Error("aborted"));
    signal?.addEventListener("abort", onAbort, { once: true });
    void scheduler.schedule(Promise.resolve(), label).then(() => {
      signal?.removeEventListener("abort", onAbort);
      if (signal?.aborted) return;
      onRelease();
      resolve();
    });
  });
}

/** The valid arguments a person would type when editing a call in the approval UI. */
export const EDITED_ARGS: Record<ToolName, Record<string, unknown>> = {
  echo: { text: "edited" },
  slow: { ms: 2 },
  fails: { loud: false },
  hangs: {},
  big: { n: 10 },
  ghost: { q: "edited" },
};

/** The raw argument text the model sends for a call of `tool` with arguments of `kind`. */
export function argumentsFor(tool: ToolName, kind: ArgsKind): string {
  const valid: Record<ToolName, Record<string, unknown>> = {
    echo: { text: "hello" },
    slow: { ms: 1 },
    fails: { loud: false },
    hangs: {},
    big: { n: 5_000 },
    ghost: { q: "anything" },
  };
  const wrong: Record<ToolName, Record<string, unknown>> = {
    echo: { text: 42 },
    slow: { ms: "soon" },
    fails: { loud: "very" },
    hangs: { extra: true },
    big: { n: -1 },
    ghost: { q: 1 },
  };
  switch (kind) {
    case "valid":
      return JSON.stringify(valid[tool]);
    case "badJson":
      return '{"text": "unterminated';
    case "array":
      return "[1, 2, 3]";
    case "wrongType":
      return JSON.stringify(wrong[tool]);
    case "empty":
      return "";
    case "huge":
      // A huge but valid call: a huge text for echo, a loud failure for fails, padding for the rest.
      if (tool === "echo") return JSON.stringify({ text: "h".repeat(HUGE) });
      if (tool === "fails") return JSON.stringify({ loud: true, pad: "p".repeat(HUGE) });
      return JSON.stringify({ ...valid[tool], pad: "p".repeat(HUGE) });
  }
}

/**
 * The agent's tools, each recording its executions: echo (parallel-safe, tagged "read"), slow
 * (waits for the scheduler), fails (throws, loudly with a huge message when asked), hangs (never
 * ends by itself; a 3 ms timeout stops it) and big (a huge output, tagged "bulk").
 */
export function instrumentedTools(scheduler: fc.Scheduler, currentIteration: () => number, onRelease: () => void) {
  const executions: Execution[] = [];
  const track = <T>(tool: string, args: Record<string, unknown>, ctx: { callId: string; signal: AbortSignal }, work: () => Promise<T>): Promise<T> => {
    const record: Execution = { tool, callId: ctx.callId, iteration: currentIteration(), args, signal: ctx.signal, settled: false };
    executions.push(record);
    return work().finally(() => {
      record.settled = true;
    });
  };
  const tools: Tool[] = [
    defineTool({
      name: "echo",
      description: "Say the text back",
      parameters: z.object({ text: z.string() }),
      parallelSafe: true,
      effectTags: ["read"],
      execute: (args, ctx) => track("echo", args, ctx, async () => `echo:${args.text}`),
    }),
    defineTool({
      name: "slow",
      description: "Finish when the scheduler says so",
      parameters: z.object({ ms: z.number() }),
      parallelSafe: true,
      execute: (args, ctx) =>
        track("slow", args, ctx, async () => {
          await gate(scheduler, "tool:slow", ctx.signal, onRelease);
          return "slow done";
        }),
    }),
    defineTool({
      name: "fails",
      description: "Always throws",
      parameters: z.object({ loud: z.boolean() }),
      execute: (args, ctx) =>
        track("fails", args, ctx, async () => {
          throw new Error(args.loud ? `boom${"!".repeat(HUGE)}` : "boom");
        }),
    }),
    defineTool({
      name: "hangs",
      description: "Never finishes on its own",
      parameters: z.object({}),
      timeoutMs: 3,
      execute: (args, ctx) =>
        track("hangs", args, ctx, () => new Promise<never>((_, reject) => ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason), { once: true }))),
    }),
    defineTool({
      name: "big",
      description: "Produce a long text",
      parameters: z.object({ n: z.number().int().min(0) }),
      effectTags: ["bulk"],
      execute: (args, ctx) => track("big", args, ctx, async () => "y".repeat(args.n)),
    }),
  ];
  return { tools, executions };
}
