import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { createActor } from "xstate";
import { human } from "../../actors/messages.js";
import type { ModelCallOptions, ModelClient, ModelTurn } from "../../actors/model-client.js";
import { PROGRESS_WINDOW_MS, ProgressBatcher, type Progress } from "../../actors/progress.js";
import { createReactMachine } from "../../machines/react-machine.js";

/*
 * Progress goes to the agent in bursts: the first event of a burst once the task that pushed it is
 * done (its microtasks included), the rest of the window at its tick, what is left on the result.
 * Fake timers hold the tick; the end of the task is a Node tick, which they leave alone, so
 * `endOfTask()` runs only the first.
 */

/** Resolves once the ticks queued before it (the batchers' end of the task) have run. */
const endOfTask = () => new Promise<void>((resolve) => process.nextTick(resolve));

type Event = { type: "started" | "delta" | "done"; n?: number };

function batcher(options: { canWait?: (event: Event) => boolean } = {}) {
  const sent: Progress<Event>[][] = [];
  let clock = 1_000;
  const progress = new ProgressBatcher<Event>((batch) => sent.push(batch), () => clock++, options);
  return { progress, sent, types: () => sent.map((batch) => batch.map((p) => `${p.event.type}${p.event.n ?? ""}`)) };
}

describe("ProgressBatcher", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => {
    // The batchers share one tick and one end-of-turn callback: let them fire before the clock goes.
    vi.runAllTimers();
    vi.useRealTimers();
  });

  it("sends the first event of a burst at the end of the task that pushed it, not a window later", async () => {
    const { progress, sent, types } = batcher();
    progress.push({ type: "delta", n: 1 });
    expect(sent).toEqual([]);
    await endOfTask();
    expect(types()).toEqual([["delta1"]]);
    expect(sent[0]![0]!.at).toBe(1_000);
  });

  it("takes along whatever arrives in the same task, and batches the rest of the window until its tick", async () => {
    const { progress, types } = batcher();
    progress.push({ type: "delta", n: 1 });
    progress.push({ type: "delta", n: 2 });
    await endOfTask();
    expect(types()).toEqual([["delta1", "delta2"]]);
    progress.push({ type: "delta", n: 3 });
    vi.advanceTimersByTime(1);
    progress.push({ type: "delta", n: 4 });
    vi.advanceTimersByTime(PROGRESS_WINDOW_MS - 2);
    expect(types()).toEqual([["delta1", "delta2"]]);
    vi.advanceTimersByTime(1);
    expect(types()).toEqual([["delta1", "delta2"], ["delta3", "delta4"]]);
  });

  it("starts a new burst, sent at once again, after a window with nothing to send", async () => {
    const { progress, types } = batcher();
    progress.push({ type: "delta", n: 1 });
    await endOfTask();
    // The window's tick finds nothing held: the burst is over.
    vi.advanceTimersByTime(PROGRESS_WINDOW_MS);
    progress.push({ type: "delta", n: 2 });
    await endOfTask();
    expect(types()).toEqual([["delta1"], ["delta2"]]);
  });

  it("lets events that can wait wait for the next burst, and sends them first, in order, with their own timestamps", async () => {
    const { progress, sent, types } = batcher({ canWait: (event) => event.type !== "delta" });
    progress.push({ type: "started" });
    await endOfTask();
    expect(sent).toEqual([]);
    progress.push({ type: "delta", n: 1 });
    await endOfTask();
    expect(types()).toEqual([["started", "delta1"]]);
    expect(sent[0]!.map((p) => p.at)).toEqual([1_000, 1_001]);
  });

  it("sends an event that can wait at the window's tick when nothing else comes, and opens no window with it", async () => {
    const { progress, types } = batcher({ canWait: (event) => event.type !== "delta" });
    progress.push({ type: "started" });
    vi.advanceTimersByTime(PROGRESS_WINDOW_MS - 1);
    expect(types()).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(types()).toEqual([["started"]]);
    // The reply's first text right after it still goes at the end of its task.
    progress.push({ type: "delta", n: 1 });
    await endOfTask();
    expect(types()).toEqual([["started"], ["delta1"]]);
  });

  it("sends nothing early when the work finishes within the task: it all rides on the result", () => {
    const { progress, sent } = batcher();
    progress.push({ type: "started" });
    progress.push({ type: "done" });
    const result = progress.attachTo({ answer: 42 });
    vi.advanceTimersByTime(PROGRESS_WINDOW_MS * 3);
    expect(sent).toEqual([]);
    expect(result).toEqual({ answer: 42, progress: [{ at: 1_000, event: { type: "started" } }, { at: 1_001, event: { type: "done" } }] });
  });

  it("keeps the order across what was sent and what rides on the result", async () => {
    const { progress, types } = batcher();
    progress.push({ type: "delta", n: 1 });
    await endOfTask();
    progress.push({ type: "delta", n: 2 });
    const result = progress.attachTo({});
    vi.advanceTimersByTime(PROGRESS_WINDOW_MS * 3);
    expect(types()).toEqual([["delta1"]]);
    expect(result.progress?.map((p) => p.event.n)).toEqual([2]);
  });
});

/** A model client that streams one piece of text, then waits until the test lets the rest come. */
function pausingModel({ text = true } = {}) {
  let release!: () => void;
  const paused = new Promise<void>((resolve) => (release = resolve));
  const client: ModelClient = {
    description: "streams one delta, then pauses",
    async complete(_request, options: ModelCallOptions = {}): Promise<ModelTurn> {
      const emit = options.onEvent ?? (() => undefined);
      emit({ type: "model.call.started", attempt: 1, model: "m", endpoint: "test" });
      if (text) emit({ type: "text.delta", delta: "Hello" });
      await paused;
      emit({ type: "text.delta", delta: text ? ", world" : "Hello, world" });
      emit({ type: "model.call.completed", attempt: 1, model: "m", endpoint: "test", usage: { promptTokens: 1, completionTokens: 2, totalTokens: 3 }, finishReason: "stop", durationMs: 1 });
      return { content: "Hello, world", toolCalls: [], usage: { promptTokens: 1, completionTokens: 2, totalTokens: 3 }, finishReason: "stop", model: "m" };
    },
  };
  return { client, release };
}

describe("the first streamed text of a reply", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => {
    // The batchers share one tick and one end-of-turn callback: let them fire before the clock goes.
    vi.runAllTimers();
    vi.useRealTimers();
  });

  it("reaches a text.delta listener at the end of the task that read it, before the window elapses", async () => {
    const { client, release } = pausingModel();
    const actor = createActor(createReactMachine({ modelClient: client, configFile: false }), { input: { messages: [human("greet")] } });
    const seen: string[] = [];
    actor.on("*", (event) => seen.push(event.type === "text.delta" ? `text.delta:${event.delta}` : event.type));
    actor.start();
    // Past the turns that start the run and the call, but short of the window's tick.
    await vi.advanceTimersByTimeAsync(1);
    expect(seen).toEqual(["reply.started", "model.call.started", "text.delta:Hello"]);
    expect(actor.getSnapshot().context.state["streamingOutput"]).toBe("Hello");
    release();
    await vi.advanceTimersByTimeAsync(PROGRESS_WINDOW_MS);
    expect(actor.getSnapshot().status).toBe("done");
    expect(seen).toEqual(["reply.started", "model.call.started", "text.delta:Hello", "text.delta:, world", "model.call.completed", "reply.completed", "loop.terminated"]);
  });

  it("a call's start waits for the window's tick: alone it is not worth a step of the agent", async () => {
    const { client, release } = pausingModel({ text: false });
    const received: string[] = [];
    const actor = createActor(createReactMachine({ modelClient: client, configFile: false }), {
      input: { messages: [human("greet")] },
      inspect: (e) => e.type === "@xstate.event" && e.event.type === "llm.progress" && received.push(e.event.type),
    });
    actor.start();
    await vi.advanceTimersByTimeAsync(1);
    expect(received).toEqual([]);
    await vi.advanceTimersByTimeAsync(PROGRESS_WINDOW_MS);
    expect(received).toEqual(["llm.progress"]);
    release();
    await vi.advanceTimersByTimeAsync(PROGRESS_WINDOW_MS);
    expect(actor.getSnapshot().status).toBe("done");
  });
});

describe("the end of the task, on the real event loop", () => {
  // The real tick these tests leave behind would hold back a fake one: let it pass.
  afterEach(() => new Promise((resolve) => setTimeout(resolve, PROGRESS_WINDOW_MS + 5)));

  it("sends the first event before the event loop takes its next task, where V8 runs the GC work it scheduled", async () => {
    const { progress, types } = batcher();
    const sentBeforeNextTask = new Promise<number>((resolve) => setImmediate(() => resolve(types().length)));
    progress.push({ type: "delta", n: 1 });
    expect(await sentBeforeNextTask).toBe(1);
  });

  it("still takes along what the task's later microtasks push, as a stream's parser does with the rest of the bytes", async () => {
    const { progress, types } = batcher();
    progress.push({ type: "delta", n: 1 });
    await Promise.resolve();
    progress.push({ type: "delta", n: 2 });
    await Promise.resolve();
    await Promise.resolve();
    progress.push({ type: "delta", n: 3 });
    await endOfTask();
    expect(types()).toEqual([["delta1", "delta2", "delta3"]]);
  });
});
