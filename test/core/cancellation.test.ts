import { describe, expect, it } from "vitest";
import { createActor } from "xstate";
import { z } from "zod";
import { human } from "../../actors/messages.js";
import { LazyCancellation } from "../../actors/cancellation.js";
import { fromReportingPromise, type ReportingPromiseArgs } from "../../actors/reporting-promise.js";
import { createReactMachine } from "../../machines/react-machine.js";
import { runAgent } from "../../machines/runner.js";
import { scriptedModel } from "../../testing/scripted-model.js";
import { defineTool } from "../../tools/tool.js";

/*
 * A reporting step makes its AbortSignal only when something reads it, and a tool's ctx reads its
 * signal and state through shared getters (actors/cancellation.ts, actors/tool-executor.ts).
 * Neither may change what a creator, a runner or a tool sees.
 */

const never = new Promise<never>(() => undefined);

describe("a step's cancellation, made on demand", () => {
  it("stopping a step that never read its signal tells onAbort, and the signal read afterwards is aborted", () => {
    let args: ReportingPromiseArgs<void, { type: string }> | undefined;
    const logic = fromReportingPromise<string, void, { type: string }>((given) => {
      args = given;
      return never;
    });
    const actor = createActor(logic).start();
    const stops: unknown[] = [];
    args!.cancellation!.onAbort(() => stops.push(args!.cancellation!.reason));
    expect(args!.cancellation!.aborted).toBe(false);
    actor.stop();
    expect(args!.cancellation!.aborted).toBe(true);
    expect(stops).toHaveLength(1);
    expect(stops[0]).toBeInstanceOf(DOMException);
    expect(args!.signal.aborted).toBe(true);
    expect(args!.signal.reason).toBe(stops[0]);
  });

  it("a signal read before the stop is aborted by it, and spreading the arguments keeps it", () => {
    let signal: AbortSignal | undefined;
    let keys: string[] = [];
    const logic = fromReportingPromise<string, void>((given) => {
      const copy = { ...given };
      keys = Object.keys(copy);
      signal = copy.signal;
      return never;
    });
    const actor = createActor(logic).start();
    expect(keys).toContain("signal");
    expect(signal).toBeInstanceOf(AbortSignal);
    expect(signal!.aborted).toBe(false);
    actor.stop();
    expect(signal!.aborted).toBe(true);
  });

  it("a step that settles is not aborted afterwards", async () => {
    let given: ReportingPromiseArgs<void, { type: string }> | undefined;
    const logic = fromReportingPromise<string, void, { type: string }>(async (args) => {
      given = args;
      return "done";
    });
    const actor = createActor(logic).start();
    await new Promise<void>((resolve) => actor.subscribe({ complete: resolve }));
    expect(actor.getSnapshot().output).toBe("done");
    actor.stop();
    expect(given!.cancellation!.aborted).toBe(false);
  });
});

describe("a tool's ctx", () => {
  it("holds signal, callId and state as own enumerable properties: a runner that spreads it loses none", async () => {
    // What the tool gets is the runner's copy: every property must have come through the spread.
    const seen: { keys: string[]; isSignal: boolean; callId: string; messages: number }[] = [];
    const peek = defineTool({
      name: "peek",
      description: "Look at what the runner handed over",
      parameters: z.object({}),
      execute: (_args, ctx) => {
        const messages = (ctx.state["messages"] as unknown[]).length;
        seen.push({ keys: Object.keys(ctx).sort(), isSignal: ctx.signal instanceof AbortSignal && !ctx.signal.aborted, callId: ctx.callId, messages });
        return "ok";
      },
    });
    const model = scriptedModel([{ toolCalls: [{ id: "peek_1", name: "peek", arguments: {} }] }, { content: "fine" }]);
    const machine = createReactMachine({ modelClient: model, tools: [peek], toolRunner: (tool, args, ctx) => tool.execute(args, { ...ctx }) });
    const output = await runAgent(machine, { messages: [human("look")] });
    expect(output.status).toBe("succeeded");
    expect(seen).toEqual([
      { keys: ["callId", "signal", "state"], isSignal: true, callId: "peek_1", messages: 2 },
    ]);
  });
});

describe("LazyCancellation", () => {
  it("runs each listener once, skips removed ones, makes no signal until read, and gives an aborted one when read late", () => {
    const cancellation = new LazyCancellation();
    const calls: string[] = [];
    cancellation.onAbort(() => calls.push("kept"));
    const remove = cancellation.onAbort(() => calls.push("removed"));
    remove();
    cancellation.abort();
    cancellation.abort();
    expect(calls).toEqual(["kept"]);
    expect(cancellation.aborted).toBe(true);
    expect(cancellation.signal.aborted).toBe(true);
    expect(cancellation.reason).toBe(cancellation.signal.reason);
  });

  it("never calls a listener added after the stop, and aborts a signal read before it", () => {
    const cancellation = new LazyCancellation();
    const signal = cancellation.signal;
    expect(signal.aborted).toBe(false);
    expect(cancellation.reason).toBeUndefined();
    cancellation.abort();
    expect(signal.aborted).toBe(true);
    let late = false;
    cancellation.onAbort(() => (late = true))();
    expect(late).toBe(false);
  });
});
